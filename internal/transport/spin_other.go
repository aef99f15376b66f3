//go:build !linux

package transport

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// Spinning is implemented for Linux only (spin.go); elsewhere TCPOptions.Spin
// is accepted and ignored, and every reader and writer parks in the poller.

type spinners struct{}

type spinEnd struct{ kicked atomic.Bool }

func (t *TCP) setupSpin(p *peer, dr *deadlineReader) {}

func (e *spinEnd) retire() {}

func (e *spinEnd) wasKicked(err error) bool {
	return e != nil && errors.Is(err, os.ErrDeadlineExceeded) && e.kicked.Swap(false)
}

func (d *deadlineReader) spinRead(b []byte) (int, error) { return d.c.Read(b) }

func (p *peer) writeSpin(bufs [][]byte, deadline time.Time) (int64, error) {
	return (*net.Buffers)(&bufs).WriteTo(p.conn)
}
