//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package rendezvous

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

const supportsFlock = true

// lockFile takes a flock on f without ever blocking in the kernel, so that
// the wait stays bounded by ctx: a process that hangs holding the lock
// turns into a timeout naming the file, not a hung rank.
func lockFile(ctx context.Context, f *os.File, exclusive bool, start time.Time, path string) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	backoff := 500 * time.Microsecond
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return &os.PathError{Op: "flock", Path: path, Err: err}
		}
		if sleepCtx(ctx, backoff) != nil {
			return ctxError(ctx, start, "the lock on "+path)
		}
		backoff = min(2*backoff, 20*time.Millisecond)
	}
}
