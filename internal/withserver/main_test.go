package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
)

// Not parallel: a process forked by another test between freePort's
// Listen and Close would keep the port bound until it execs.
func TestFreePort(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	if port <= 0 || port > 65535 {
		t.Fatalf("freePort() = %d", port)
	}
	// The port must be free again, for the server to take it.
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port %d from freePort is not free: %v", port, err)
	}
	l.Close()
}

func TestExistingEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  bool
	}{
		{"", false},
		{"  ", false},
		{"http://127.0.0.1:8000", true},
		{"aws", true},
	} {
		getenv := func(k string) string {
			if k == envEndpoint {
				return tc.value
			}
			return ""
		}
		if _, got := existingEndpoint(getenv); got != tc.want {
			t.Errorf("existingEndpoint with %s=%q: %v, want %v", envEndpoint, tc.value, got, tc.want)
		}
	}
}

func TestRunExitCode(t *testing.T) {
	t.Parallel()
	for script, want := range map[string]int{
		"exit 0":                  0,
		"exit 3":                  3,
		`[ "$WS_TEST" = yes ]`:    0, // the extra environment reaches the command
		"kill -TERM $$":           128 + 15,
		"exec /nonexistent/thing": 127,
	} {
		if got := run([]string{"sh", "-c", script}, []string{"WS_TEST=yes"}, nil); got != want {
			t.Errorf("run(sh -c %q) = %d, want %d", script, got, want)
		}
	}
	if got := run([]string{"/nonexistent/command"}, nil, nil); got != 127 {
		t.Errorf("run of a missing command = %d, want 127", got)
	}
}

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	b := &tailBuffer{max: 10}
	if got := b.String(); got != "(no output)" {
		t.Errorf("empty tailBuffer = %q", got)
	}
	b.Write([]byte(strings.Repeat("a", 15)))
	b.Write([]byte("0123456789xyz"))
	if got := b.String(); got != "3456789xyz" {
		t.Errorf("tailBuffer = %q, want the last 10 bytes", got)
	}
}

// TestPlatformCheck simulates the platform check: dynoxide has a build for
// linux/amd64 alone, so elsewhere -check exits 3 and says make test runs
// against dynalite; dynalite runs anywhere; with an endpoint set nothing is
// started, so every platform passes.
func TestPlatformCheck(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		server, goos, goarch string
		getenv               func(string) string
		want                 int
		says                 string
	}{
		{"dynoxide", "linux", "amd64", noEnv, 0, ""},
		{"dynoxide", "darwin", "arm64", noEnv, exitNoBuild, "dynoxide: no build for this platform (darwin/arm64; package.json pins @dynoxide/linux-x64 only): make test runs against dynalite alone"},
		{"dynoxide", "linux", "arm64", noEnv, exitNoBuild, "linux/arm64"},
		{"dynoxide", "windows", "amd64", noEnv, exitNoBuild, "windows/amd64"},
		{"dynalite", "darwin", "arm64", noEnv, 0, ""},
		{"dynoxide", "darwin", "arm64", func(k string) string {
			if k == envEndpoint {
				return "http://localhost:8000"
			}
			return ""
		}, 0, ""},
		{"dynamodb-local", "linux", "amd64", noEnv, 2, "unknown server"},
	} {
		var said strings.Builder
		got := checkServer(tc.server, tc.getenv, tc.goos, tc.goarch, func(format string, args ...any) { said.WriteString(fmt.Sprintf(format, args...)) })
		if got != tc.want || !strings.Contains(said.String(), tc.says) || (tc.says == "") != (said.Len() == 0) {
			t.Errorf("%s on %s/%s: exit %d, said %q; want %d, %q", tc.server, tc.goos, tc.goarch, got, said.String(), tc.want, tc.says)
		}
	}
}
