//go:build !linux

package transport

import (
	"context"
	"time"
)

// Shared memory within a host is Linux's only (linkspec.ShmSupported);
// elsewhere "auto" is TCP.

type shmLink struct{}

func (l *shmLink) send(context.Context, uint64, []byte, time.Time, time.Time) error { return nil }
func (l *shmLink) sendNow(uint64, []byte) bool                                      { return false }
func (l *shmLink) peerGone(error)                                                   {}
func (l *shmLink) waitInline(context.Context, *Pending) bool                        { return false }
func (t *TCP) setupShm(context.Context) error                                       { return nil }
func (t *TCP) stopShm(time.Time)                                                    {}
