package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestDynaliteSurvivesAbortedRequest starts dynalite as run does and closes
// a connection in the middle of a request body, as a Go client whose
// context is cancelled in flight does: the server must go on answering.
// Without dynalite_guard.js the same abort ends dynalite, which the test
// also checks, so that it shows the guard is what keeps the server up.
func TestDynaliteSurvivesAbortedRequest(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "dynalite", "cli.js")); err != nil {
		t.Skip("dynalite is not installed (run `make node_modules`)")
	}
	start := func(t *testing.T, guarded bool) *server {
		s, err := newServer("dynalite", root)
		if err != nil {
			t.Fatal(err)
		}
		if !guarded {
			s.argv = append([]string{"node"}, s.argv[3:]...) // drop --require and the guard
		}
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.start(port); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.stop)
		if _, err := s.waitHealthy(nil); err != nil {
			t.Fatal(err)
		}
		return s
	}
	abort := func(t *testing.T, s *server) {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(s.port))
		if err != nil {
			t.Fatal(err)
		}
		// A body of 100 bytes announced, one sent.
		req := "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amz-json-1.0\r\n" +
			"X-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 100\r\n\r\n{"
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		// Closing with unread data pending makes the kernel reset the
		// connection, as a cancelled request's transport does.
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
	t.Run("guarded", func(t *testing.T) {
		s := start(t, true)
		for range 3 {
			abort(t, s)
			// The server answers the next request on a new connection:
			// the abort, which reached it first, did not end it.
			if !answersHTTP(context.Background(), s.endpoint()) {
				t.Fatalf("dynalite stopped answering after an aborted request; output:\n%s", s.out.String())
			}
		}
		select {
		case <-s.exited:
			t.Fatalf("dynalite exited after an aborted request; output:\n%s", s.out.String())
		default:
		}
	})
	t.Run("unguarded", func(t *testing.T) {
		s := start(t, false)
		abort(t, s)
		select {
		case <-s.exited:
		case <-time.After(2 * time.Minute):
			// Not a timing assertion: dynalite either exits on the abort,
			// promptly, or never does.
			t.Fatalf("dynalite without the guard outlived an aborted request: is dynalite_guard.js still needed?")
		}
	})
}
