package ops

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/stretchr/testify/require"
)

// hostRecorder is the HTTP client of the AWS configuration under test: it
// records the host of every request and sends none.
type hostRecorder struct {
	mu    sync.Mutex
	hosts []string
}

func (r *hostRecorder) Do(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hosts = append(r.hosts, req.URL.Host)
	return nil, errors.New("this test sends nothing")
}

func (r *hostRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.hosts)
}

// imdsHost is the EC2 instance metadata service's IPv4 address
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html).
const imdsHost = "169.254.169.254"

// TestNoIMDSProbeWithoutCredentials: with no credentials anywhere, the
// command says so without sending a request to the EC2 instance metadata
// service, unless the environment asks for it (AWS_EC2_METADATA_DISABLED
// =false, a profile whose credential_source is Ec2InstanceMetadata, an
// IMDS endpoint) or the host is an EC2 instance; AWS_EC2_METADATA_DISABLED
// =true wins even there. Credentials from the environment are used as
// before, with no request.
func TestNoIMDSProbeWithoutCredentials(t *testing.T) {
	dir := t.TempDir()
	configFile := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(configFile, []byte("[profile imds]\n"+
		"role_arn = arn:aws:iam::123456789012:role/operator\n"+
		"credential_source = Ec2InstanceMetadata\n"+
		"[profile plain]\nregion = eu-west-1\n"), 0o600))
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_EC2_METADATA_DISABLED", "AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "AWS_DEFAULTS_MODE",
		"AWS_CA_BUNDLE"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", configFile)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials")) // none
	t.Setenv("AWS_REGION", "us-east-1")

	// lookup makes the command's client as dynamo does, on a host that is
	// an EC2 instance or not, and returns the hosts its credential lookup
	// sent requests to, and its error.
	lookup := func(t *testing.T, ec2 bool, profile string, kv ...string) ([]string, error) {
		t.Helper()
		for i := 0; i+1 < len(kv); i += 2 {
			t.Setenv(kv[i], kv[i+1])
		}
		rec := &hostRecorder{}
		e := &env{ctx: t.Context(), onEC2: func() bool { return ec2 },
			awsLoad: []func(*config.LoadOptions) error{config.WithHTTPClient(rec),
				config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} })}}
		e.g.profile = profile
		_, err := e.dynamo()
		return rec.seen(), err
	}

	t.Run("nothing asks", func(t *testing.T) {
		hosts, err := lookup(t, false, "")
		require.ErrorContains(t, err, "no AWS credentials found")
		require.ErrorContains(t, err, "the EC2 instance metadata service (an instance role) is asked only on EC2, or with AWS_EC2_METADATA_DISABLED=false")
		require.Empty(t, hosts, "no request, to IMDS or anywhere")
		hosts, err = lookup(t, false, "plain")
		require.ErrorContains(t, err, "no AWS credentials found")
		require.Empty(t, hosts, "a profile without credentials asks for no IMDS either")
	})
	t.Run("AWS_EC2_METADATA_DISABLED=false", func(t *testing.T) {
		hosts, err := lookup(t, false, "", "AWS_EC2_METADATA_DISABLED", "false")
		require.ErrorContains(t, err, "no AWS credentials found")
		require.NotContains(t, err.Error(), "is asked only on EC2")
		require.Contains(t, hosts, imdsHost, "the environment asks for IMDS")
	})
	t.Run("credential_source", func(t *testing.T) {
		hosts, err := lookup(t, false, "imds")
		require.ErrorContains(t, err, "no AWS credentials found")
		require.Contains(t, hosts, imdsHost, "the profile asks for IMDS")
	})
	t.Run("endpoint", func(t *testing.T) {
		hosts, err := lookup(t, false, "", "AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://"+imdsHost)
		require.ErrorContains(t, err, "no AWS credentials found")
		require.Contains(t, hosts, imdsHost, "the environment names an IMDS endpoint")
	})
	t.Run("on EC2", func(t *testing.T) {
		hosts, err := lookup(t, true, "")
		require.ErrorContains(t, err, "no AWS credentials found")
		require.Contains(t, hosts, imdsHost, "an EC2 instance may have a role")
		hosts, err = lookup(t, true, "", "AWS_EC2_METADATA_DISABLED", "true")
		require.ErrorContains(t, err, "no AWS credentials found")
		require.Empty(t, hosts, "AWS_EC2_METADATA_DISABLED=true is a no, even on EC2")
	})
	t.Run("credentials in the environment", func(t *testing.T) {
		hosts, err := lookup(t, true, "", "AWS_ACCESS_KEY_ID", "a", "AWS_SECRET_ACCESS_KEY", "b")
		require.NoError(t, err)
		require.Empty(t, hosts, "static credentials need no request")
	})
}

// TestEC2Host: the files that tell an EC2 instance, Nitro or Xen, and a
// host without them.
func TestEC2Host(t *testing.T) {
	t.Parallel()
	files := func(m map[string]string) func(string) string { return func(p string) string { return m[p] } }
	for name, tc := range map[string]struct {
		files map[string]string
		want  bool
	}{
		"no files":   {nil, false},
		"nitro":      {map[string]string{"/sys/devices/virtual/dmi/id/sys_vendor": "Amazon EC2"}, true},
		"asset tag":  {map[string]string{"/sys/devices/virtual/dmi/id/board_asset_tag": "i-0123456789abcdef0"}, true},
		"xen":        {map[string]string{"/sys/hypervisor/uuid": "EC2E1916-9099-7CAF-FD21-012345ABCDEF"}, true},
		"other":      {map[string]string{"/sys/devices/virtual/dmi/id/sys_vendor": "QEMU", "/sys/hypervisor/uuid": "4a3b0c6e-0000"}, false},
		"empty tags": {map[string]string{"/sys/devices/virtual/dmi/id/board_asset_tag": ""}, false},
	} {
		require.Equal(t, tc.want, ec2Host(files(tc.files)), name)
	}
}
