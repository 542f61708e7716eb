//go:build unix

package ddbindex

import (
	"syscall"
	"time"
)

// The overhead benchmarks also report the process CPU time per operation,
// which, unlike ns/op, other processes competing for the CPU hardly change.
func init() {
	benchProcessCPU = func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
}
