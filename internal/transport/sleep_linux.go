//go:build linux

package transport

import (
	"syscall"
	"time"
)

// prSetTimerSlack is prctl(2)'s PR_SET_TIMERSLACK.
const prSetTimerSlack = 29

// nanosleep blocks the calling thread for d, with the kernel's precision
// rather than the Go poller's millisecond; see sleepUntil. It first sets the
// thread's timer slack to 1µs (the default, 50µs, is how late the kernel may
// wake a sleeper to batch wake-ups), so a shaped link's latency is kept
// without spinning, which would take the cores the peers need.
func nanosleep(d time.Duration) {
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1000, 0)
	ts := syscall.NsecToTimespec(int64(d))
	// The runtime's preemption signals interrupt the sleep; go on with
	// what is left.
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
