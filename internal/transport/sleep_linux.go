//go:build linux

package transport

import (
	"syscall"
	"time"
)

// nanosleep blocks the calling thread for d, with the kernel's precision
// rather than the Go poller's millisecond; see sleepUntil.
func nanosleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	// The runtime's preemption signals interrupt the sleep; go on with
	// what is left.
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
