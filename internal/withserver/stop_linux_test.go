package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hangGuard bounds the test's waits for what the processes signal: far
// beyond any plausible wait (a shell forking, a killed process exiting),
// only so that a hung test fails saying what it waited for.
const hangGuard = 2 * time.Minute

// TestStopKillsGroup: stop leaves no process of the server's group alive,
// whether the server obeys SIGTERM or ignores it (then SIGKILL after the
// grace period). The script tells, through a FIFO, that its background
// sleep runs and its pid; the test waits for that pid to exit through a
// pidfd: nothing depends on timing.
func TestStopKillsGroup(t *testing.T) {
	t.Parallel()
	// The sleep writes elsewhere than sh: holding the output pipe, which
	// stop waits for (exec.Cmd.Wait), a survivor would hold stop up until
	// it ended by itself, and pass.
	for name, script := range map[string]string{
		"obeys SIGTERM":   "sleep 100 >/dev/null 2>&1 & echo $! >'%s'; wait",
		"ignores SIGTERM": `trap "" TERM; sleep 100 >/dev/null 2>&1 & echo $! >'%s'; wait`, // the sleep inherits the ignored signal
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fifo := filepath.Join(t.TempDir(), "ready")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			// Read and write: the open does not wait for a writer, and
			// reads wait for the script's line rather than see EOF.
			ready, err := os.OpenFile(fifo, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer ready.Close()
			s := &server{name: "fake", argv: []string{"sh", "-c", fmt.Sprintf(script, fifo)}, grace: 300 * time.Millisecond}
			if err := s.start(0); err != nil {
				t.Fatal(err)
			}
			pgid := s.cmd.Process.Pid
			sleepPID := readPID(t, ready)
			pidfd, err := pidfdOpen(sleepPID)
			if errors.Is(err, syscall.ENOSYS) {
				s.stop()
				t.Skip("no pidfd_open on this kernel")
			}
			if err != nil {
				s.stop()
				t.Fatalf("pidfd_open(%d): %v", sleepPID, err)
			}
			defer syscall.Close(pidfd)

			start := time.Now()
			s.stop()
			t.Logf("stopped in %v", time.Since(start))
			// stop has waited for sh; its sleep, orphaned, got the group's
			// SIGKILL, which is delivered asynchronously.
			if err := awaitExit(pidfd, hangGuard); err != nil {
				t.Fatalf("sleep (pid %d) of group %d: %v", sleepPID, pgid, err)
			}
			if pids := liveMembers(t, pgid); len(pids) > 0 {
				t.Fatalf("processes %v of group %d still run after stop", pids, pgid)
			}
		})
	}
}

// readPID reads the pid the script writes to the FIFO.
func readPID(t *testing.T, f *os.File) int {
	t.Helper()
	if err := f.SetReadDeadline(time.Now().Add(hangGuard)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Fatalf("the script did not say that its sleep runs: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the script's pid %q: %v", line, err)
	}
	return pid
}

// pidfdOpen returns a pidfd of process pid (Linux 5.3 and later): it
// becomes readable when the process exits.
func pidfdOpen(pid int) (int, error) {
	const sysPidfdOpen = 434 // the same number on every architecture
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// awaitExit waits until the process of pidfd has exited (a zombie
// included), failing after limit.
func awaitExit(pidfd int, limit time.Duration) error {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	defer syscall.Close(ep)
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, pidfd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(pidfd)}); err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	events := make([]syscall.EpollEvent, 1)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("still running after the hang guard (%v)", limit)
		}
		n, err := syscall.EpollWait(ep, events, int(left.Milliseconds())+1)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return err
		case n > 0:
			return nil
		}
	}
}

// liveMembers returns the processes of group pgid that are not zombies
// (orphaned zombies wait for init, which may be slow to reap them).
func liveMembers(t *testing.T, pgid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		t.Skipf("no /proc: %v", err)
	}
	var pids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		pids = append(pids, pid)
	}
	return pids
}
