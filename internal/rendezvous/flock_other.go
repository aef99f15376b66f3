//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package rendezvous

import (
	"context"
	"errors"
	"os"
	"time"
)

const supportsFlock = false

func lockFile(context.Context, *os.File, bool, time.Time, string) error {
	return errors.New("flock is not available on this platform")
}
