//go:build unix

package models

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time, all threads together. On
// a machine shared with other jobs it shows the work a step costs even
// when wall time is inflated by waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
