// Command withserver runs a command against a private, freshly started local
// DynamoDB-compatible server, so the integration tests and examples of
// ddbindex never depend on a server someone left running.
//
// Usage:
//
//	go run ./internal/withserver -server dynoxide|dynalite [-root DIR] -- CMD ARGS...
//
// withserver picks a free port on 127.0.0.1, starts the server (from
// DIR/node_modules, DIR defaulting to the enclosing module root) in its own
// process group, waits until it answers, and runs CMD with
// DDBINDEX_ENDPOINT=http://127.0.0.1:PORT and DDBINDEX_SERVER=NAME added to
// the environment. CMD's output is streamed and withserver exits with CMD's
// exit code. Afterwards, also when CMD fails or withserver is interrupted
// (SIGINT, SIGTERM and SIGHUP are forwarded to CMD), exactly the server's
// process group is stopped: SIGTERM, then SIGKILL after at most 5 s.
//
// If DDBINDEX_ENDPOINT is already set, no server is started and CMD simply
// runs against that endpoint.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	envEndpoint = "DDBINDEX_ENDPOINT"
	envServer   = "DDBINDEX_SERVER"

	healthTimeout = 30 * time.Second
	stopGrace     = 5 * time.Second
)

func main() {
	log := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "withserver: "+format+"\n", args...) }

	server := flag.String("server", "dynoxide", "server to start: dynoxide or dynalite")
	check := flag.String("check", "", "report whether SERVER can run on this platform, and exit: 0 yes, 3 no build for this platform")
	root := flag.String("root", "", "directory holding node_modules (default: the enclosing module root)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: withserver -server dynoxide|dynalite [-root DIR] -- CMD ARGS...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *check != "" {
		os.Exit(checkServer(*check, os.Getenv, runtime.GOOS, runtime.GOARCH, log))
	}
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	args := flag.Args()

	// Install the handler before anything is started so that no signal can
	// kill withserver between starting the server and stopping it.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)

	if ep, ok := existingEndpoint(os.Getenv); ok {
		log("%s=%s is already set; running %s against it without starting a server", envEndpoint, ep, args[0])
		os.Exit(run(args, nil, sigs))
	}

	if *root == "" {
		r, err := moduleRoot()
		if err != nil {
			log("%v", err)
			os.Exit(1)
		}
		*root = r
	}
	srv, err := newServer(*server, *root)
	if err != nil {
		log("%v", err)
		os.Exit(2)
	}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			log("no free port: %v", err)
			os.Exit(1)
		}
		if err := srv.start(port); err != nil {
			log("%v", err)
			os.Exit(1)
		}
		// From here on every path must go through srv.stop.
		sig, err := srv.waitHealthy(sigs)
		if err == nil && sig == nil {
			break
		}
		srv.stop()
		if sig != nil {
			os.Exit(128 + int(sig.(syscall.Signal)))
		}
		// Someone may take the port between freePort and the server's bind.
		if errors.Is(err, errPortInUse) && attempt < 3 {
			log("port %d was taken; trying another", port)
			continue
		}
		log("%v", err)
		os.Exit(1)
	}
	log("%s is up at %s (pid %d)", srv.name, srv.endpoint(), srv.cmd.Process.Pid)

	env := []string{envEndpoint + "=" + srv.endpoint(), envServer + "=" + srv.name}
	code := run(args, env, sigs)
	select {
	case <-srv.exited: // a crash would explain CMD's failures
		log("%s exited while %s ran (%v); output:\n%s", srv.name, args[0], srv.cmd.ProcessState, srv.out.String())
	default:
	}
	srv.stop()
	os.Exit(code)
}

// existingEndpoint reports the endpoint already configured in the
// environment, if any.
func existingEndpoint(getenv func(string) string) (string, bool) {
	ep := strings.TrimSpace(getenv(envEndpoint))
	return ep, ep != ""
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// moduleRoot returns the nearest ancestor of the working directory that
// holds a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or above; pass -root", dir)
		}
	}
}

// run runs args with extra added to the environment, forwarding the
// signals from sigs to it, and returns its exit code.
func run(args, extra []string, sigs <-chan os.Signal) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), extra...)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "withserver: %v\n", err)
		return 127
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				_ = cmd.Process.Signal(sig)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	return exitCode(cmd.ProcessState, err)
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 1
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// server is one child server process.
type server struct {
	name      string
	installed string // file that must exist for the server to be usable
	argv      []string
	dir       string
	port      int
	health    func(ctx context.Context) bool
	grace     time.Duration // between SIGTERM and SIGKILL

	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{} // closed when cmd has been waited for
}

// exitNoBuild is -check's exit status for a server with no build for the
// platform.
const exitNoBuild = 3

// checkServer is -check: 0 when the server can run here (or nothing will
// be started, an endpoint being set), exitNoBuild when it has no build for
// the platform, 2 for an unknown server.
func checkServer(name string, getenv func(string) string, goos, goarch string, log func(string, ...any)) int {
	if _, ok := existingEndpoint(getenv); ok {
		return 0
	}
	switch err := platformSupport(name, goos, goarch); {
	case errors.Is(err, errNoBuild):
		log("%v: make test runs against dynalite alone", err)
		return exitNoBuild
	case err != nil:
		log("%v", err)
		return 2
	}
	return 0
}

// errNoBuild: a server with no build for the platform.
var errNoBuild = errors.New("no build for this platform")

// platformSupport reports whether the server runs on goos/goarch:
// package.json pins dynoxide's linux-x64 build alone (an optional
// dependency, so npm ci skips it elsewhere); dynalite runs on Node.js
// anywhere.
func platformSupport(name, goos, goarch string) error {
	switch name {
	case "dynoxide":
		if goos != "linux" || goarch != "amd64" {
			return fmt.Errorf("dynoxide: %w (%s/%s; package.json pins @dynoxide/linux-x64 only)", errNoBuild, goos, goarch)
		}
	case "dynalite":
	default:
		return fmt.Errorf("unknown server %q (want dynoxide or dynalite)", name)
	}
	return nil
}

func newServer(name, root string) (*server, error) {
	if err := platformSupport(name, runtime.GOOS, runtime.GOARCH); err != nil {
		return nil, err
	}
	s := &server{name: name, dir: root, grace: stopGrace}
	switch name {
	case "dynoxide":
		bin := filepath.Join(root, "node_modules", "@dynoxide", "linux-x64", "dynoxide")
		s.installed = bin
		s.argv = []string{bin, "serve", "--host", "127.0.0.1", "--port", "{port}"}
		s.health = func(ctx context.Context) bool {
			c := exec.CommandContext(ctx, bin, "healthcheck", "--port", strconv.Itoa(s.port), "--timeout", "1")
			return c.Run() == nil
		}
	case "dynalite":
		s.installed = filepath.Join(root, "node_modules", "dynalite", "cli.js")
		// The guard keeps dynalite up when a client aborts a request
		// (see dynalite_guard.js).
		guard := filepath.Join(root, "internal", "withserver", "dynalite_guard.js")
		s.argv = []string{"node", "--require", guard, s.installed,
			"--host", "127.0.0.1", "--port", "{port}",
			"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"}
		s.health = func(ctx context.Context) bool { return answersHTTP(ctx, s.endpoint()) }
	default:
		return nil, fmt.Errorf("unknown server %q (want dynoxide or dynalite)", name)
	}
	if _, err := os.Stat(s.installed); err != nil {
		return nil, fmt.Errorf("%s is not installed (run `make node_modules`): %v", name, err)
	}
	return s, nil
}

func (s *server) endpoint() string { return "http://127.0.0.1:" + strconv.Itoa(s.port) }

// answersHTTP reports whether a DynamoDB ListTables call gets any HTTP
// response at all (even an authentication error means the server is up).
func answersHTTP(ctx context.Context, endpoint string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader("{}"))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

func (s *server) start(port int) error {
	s.port = port
	argv := make([]string, len(s.argv))
	for i, a := range s.argv {
		argv[i] = strings.ReplaceAll(a, "{port}", strconv.Itoa(port))
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Dir = s.dir
	s.out = &tailBuffer{max: 4 << 10}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %v", s.name, err)
	}
	s.exited = make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	return nil
}

var errPortInUse = errors.New("port in use")

// waitHealthy waits until the server answers. It returns the signal if one
// arrives first, and an error if the server dies or times out.
func (s *server) waitHealthy(sigs <-chan os.Signal) (os.Signal, error) {
	deadline := time.Now().Add(healthTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ok := s.health(ctx)
		cancel()
		select {
		case <-s.exited:
			out := s.out.String()
			err := fmt.Errorf("%s exited before becoming healthy (%v); output:\n%s", s.name, s.cmd.ProcessState, out)
			if strings.Contains(out, "EADDRINUSE") || strings.Contains(out, "already in use") {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return nil, err
		default:
		}
		// Checked after exited: what answers might be another process on
		// the port our server failed to bind.
		if ok {
			return nil, nil
		}
		select {
		case <-s.exited: // reported above on the next iteration
		case sig := <-sigs:
			return sig, nil
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s not healthy on port %d after %v; output:\n%s", s.name, s.port, healthTimeout, s.out.String())
		}
	}
}

// stop terminates the server's process group: SIGTERM, and once the
// server has exited or s.grace has passed, SIGKILL for anything left in
// the group.
func (s *server) stop() {
	pgid := s.cmd.Process.Pid // Setpgid: the group id is the leader's pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(s.grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-s.exited
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

var _ io.Writer = (*tailBuffer)(nil)

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buf.Len() == 0 {
		return "(no output)"
	}
	return t.buf.String()
}
