package ddbindex

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// streamOnlyDeps are the modules and packages only the stream package may
// import, so that a service that reads (or writes through) builds without
// them. `make lint` checks the same.
var streamOnlyDeps = []string{
	"github.com/aws/aws-lambda-go",
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams",
}

// The SDK's attribute value codec, which the root package uses, imports
// the small dynamodbstreams/types package (for its stream-value
// conversions): those of its dependencies are allowed, not the Streams
// client.
const sdkAttributeValue = "github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

// goList runs `go list` with args and returns its output's fields.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go tool is not available: %v", err)
	}
	out, err := exec.CommandContext(t.Context(), goTool, append([]string{"list"}, args...)...).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
	}
	require.NoError(t, err)
	return strings.Fields(string(out))
}

// streamOnly returns the paths of pkgs that are streamOnlyDeps or inside
// them, except those in allowed.
func streamOnly(pkgs, allowed []string) []string {
	var out []string
	for _, p := range pkgs {
		for _, m := range streamOnlyDeps {
			if (p == m || strings.HasPrefix(p, m+"/")) && !slices.Contains(allowed, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestRootImportsNoStreamClients: the root package imports neither
// aws-lambda-go nor anything of DynamoDB Streams, and depends on them only
// through the SDK's attribute value codec (which does not bring in the
// Streams client). The stream package imports both, which shows the check
// can fail.
func TestRootImportsNoStreamClients(t *testing.T) {
	t.Parallel()
	direct := goList(t, "-f", `{{join .Imports " "}}`, ".")
	require.Contains(t, direct, "github.com/aws/aws-sdk-go-v2/service/dynamodb", "the list holds the root package's imports")
	require.Empty(t, streamOnly(direct, nil), "the root package imports them")

	deps := goList(t, "-deps", ".")
	require.Contains(t, deps, sdkAttributeValue)
	require.NotContains(t, deps, "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams", "the Streams client")
	require.Empty(t, streamOnly(deps, goList(t, "-deps", sdkAttributeValue)), "the root package depends on them")

	stream := goList(t, "-deps", "./stream")
	require.Contains(t, stream, "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams")
	require.Contains(t, stream, "github.com/aws/aws-lambda-go/events")
	require.NotEmpty(t, streamOnly(stream, goList(t, "-deps", sdkAttributeValue)))
}

// TestOTelAPIOnly: the library (the root and the stream package) records
// telemetry through the OpenTelemetry API and never depends on its SDK,
// which the application chooses; only tests use the SDK.
func TestOTelAPIOnly(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{".", "./stream"} {
		deps := goList(t, "-deps", pkg)
		for _, api := range []string{"go.opentelemetry.io/otel", "go.opentelemetry.io/otel/metric", "go.opentelemetry.io/otel/trace"} {
			require.Contains(t, deps, api, "%s records through the API", pkg)
		}
		for _, d := range deps {
			require.False(t, d == "go.opentelemetry.io/otel/sdk" || strings.HasPrefix(d, "go.opentelemetry.io/otel/sdk/"), "%s depends on the SDK package %s", pkg, d)
		}
	}
	tests := goList(t, "-test", "-deps", ".")
	require.Contains(t, tests, "go.opentelemetry.io/otel/sdk/metric", "the tests use the SDK, so the check can fail")
}
