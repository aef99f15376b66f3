//go:build !linux

package transport

import "time"

// nanosleep falls back to a Go timer where nanosleep(2) is not wired up.
func nanosleep(d time.Duration) { time.Sleep(d) }
