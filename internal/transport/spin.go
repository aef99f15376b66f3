//go:build linux

package transport

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Spinning (TCPOptions.Spin) keeps a waiting reader or writer polling its
// socket instead of parking in Go's network poller: a parked goroutine is
// woken by the poller, then its thread, then (on a virtual machine) its
// virtual CPU, and that costs tens of microseconds per message.
//
// A spinner yields between polls (runtime.Gosched), so that the goroutine it
// has just handed a message to runs at once on the same thread. But Go's
// scheduler asks the poller for ready sockets only when a processor runs out
// of work, and from its monitor thread every 10 ms: while something spins,
// nothing runs out of work, and a goroutine parked in the poller, such as a
// reader whose peer had been quiet, would wait up to 10 ms after its socket
// became ready. So spinners do the poller's job for the transport's own
// sockets: every few polls they poll the sockets whose reader or writer is
// parked, and wake those that are ready by moving their deadline into the
// past, which readies a parked goroutine without the poller. The woken side
// sees that it was kicked, restores its deadline, and carries on.

// spinPollEvery is how many spins pass between looks at the parked sockets:
// a poll(2) of a few sockets costs about as much as a few spins.
const spinPollEvery = 16

// spinFairness is how long a spinning reader that keeps finding data reads
// before it yields and looks at the parked sockets.
const spinFairness = 20 * time.Microsecond

// spinners is the set of a transport's socket ends that may park.
type spinners struct {
	mu    sync.Mutex
	ends  []*spinEnd
	kicks atomic.Int64 // parked ends woken, for tests
}

// spinEnd is one direction of one socket: its reader or its writer.
type spinEnd struct {
	fd     int
	events int16 // unix.POLLIN or unix.POLLOUT
	parked atomic.Bool
	kicked atomic.Bool
	kick   func()       // moves the direction's deadline into the past
	iov    []unix.Iovec // the write side's writev scratch, under the write lock
}

// setupSpin readies a new connection's reader and writer for spinning.
func (t *TCP) setupSpin(p *peer, dr *deadlineReader) {
	c := p.conn
	raw, err := c.SyscallConn()
	if err != nil {
		return // no spinning on this connection
	}
	var fd int
	raw.Control(func(f uintptr) { fd = int(f) })
	p.raw, dr.raw, dr.spinners = raw, raw, &t.spinners
	dr.end = &spinEnd{fd: fd, events: unix.POLLIN, kick: func() { c.SetReadDeadline(time.Unix(1, 0)) }}
	p.wend = &spinEnd{fd: fd, events: unix.POLLOUT, kick: func() { c.SetWriteDeadline(time.Unix(1, 0)) }}
	t.spinners.add(dr.end)
	t.spinners.add(p.wend)
}

// retire takes an end whose socket is closing out of the spinners' looks:
// its descriptor may soon name another file.
func (e *spinEnd) retire() {
	if e != nil {
		e.parked.Store(false)
		e.kicked.Store(true) // never kicked again
	}
}

func (s *spinners) add(e *spinEnd) {
	s.mu.Lock()
	s.ends = append(s.ends, e)
	s.mu.Unlock()
}

// wakeParked wakes the parked ends whose sockets are ready.
func (s *spinners) wakeParked() {
	var fds [8]unix.PollFd
	var ends [8]*spinEnd
	n := 0
	s.mu.Lock()
	for _, e := range s.ends {
		if n == len(fds) {
			break // the rest wait for the next look
		}
		if e.parked.Load() {
			fds[n] = unix.PollFd{Fd: int32(e.fd), Events: e.events}
			ends[n] = e
			n++
		}
	}
	s.mu.Unlock()
	if n == 0 {
		return
	}
	if k, err := unix.Poll(fds[:n], 0); err != nil || k == 0 {
		return
	}
	for i := range n {
		if fds[i].Revents != 0 && ends[i].parked.Load() && !ends[i].kicked.Swap(true) {
			s.kicks.Add(1)
			ends[i].kick()
		}
	}
}

// wasKicked reports whether err is a deadline that a spinner set to wake
// this end, rather than a real one; it clears the mark.
func (e *spinEnd) wasKicked(err error) bool {
	return e != nil && errors.Is(err, os.ErrDeadlineExceeded) && e.kicked.Swap(false)
}

// spinRead reads from the socket, polling it while d.activeUntil lasts:
// see the comment at the top of this file. After that it parks as usual,
// so an idle link costs no CPU.
func (d *deadlineReader) spinRead(b []byte) (int, error) {
	// A reader that always finds data never runs out of work either: every
	// spinFairness it yields, so the rank can send meanwhile (on one
	// processor it would otherwise wait until the link ran dry), and looks
	// at the parked sockets.
	d.end.parked.Store(false) // awake: no spinner need kick it
	if now := time.Now().UnixNano(); now >= d.nextLook {
		d.nextLook = now + int64(spinFairness)
		d.spinners.wakeParked()
		runtime.Gosched()
	}
	var n int
	var err error
	rerr := d.raw.Read(func(fd uintptr) bool {
		d.end.parked.Store(false)
		for i := 1; ; i++ {
			n, err = syscall.Read(int(fd), b)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				if time.Now().UnixNano() > d.activeUntil {
					d.end.parked.Store(true)
					return false // park until readable
				}
				d.spinners.spun(i)
				continue
			}
			return true
		}
	})
	switch {
	case rerr != nil:
		return 0, rerr // a deadline or a closed connection, as net reports it
	case err != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: d.c.LocalAddr(), Addr: d.c.RemoteAddr(), Err: os.NewSyscallError("read", err)}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// writeSpin writes bufs, polling the socket while it is full for up to the
// spin budget before parking; a kick (see above) resumes it. n counts the
// bytes written.
func (p *peer) writeSpin(bufs [][]byte, deadline time.Time) (n int64, err error) {
	t := p.t
	p.wend.parked.Store(false)
	for {
		var werr error
		full := time.Time{}
		rerr := p.raw.Write(func(fd uintptr) bool {
			p.wend.parked.Store(false)
			for i := 1; ; i++ {
				m, err := writev(int(fd), bufs, &p.wend.iov)
				if m > 0 {
					n += int64(m)
					bufs = advance(bufs, m)
					full = time.Time{}
				}
				switch {
				case len(bufs) == 0:
					return true
				case err == nil || err == syscall.EINTR:
					continue
				case err == syscall.EAGAIN:
					now := time.Now()
					if full.IsZero() {
						full = now
					}
					if now.Sub(full) > t.o.Spin {
						p.wend.parked.Store(true)
						return false // park until writable
					}
					t.spinners.spun(i)
					continue
				}
				werr = &net.OpError{Op: "write", Net: "tcp", Source: p.conn.LocalAddr(), Addr: p.conn.RemoteAddr(), Err: os.NewSyscallError("writev", err)}
				return true
			}
		})
		if p.wend.wasKicked(rerr) {
			p.conn.SetWriteDeadline(deadline)
			continue
		}
		if rerr != nil {
			return n, rerr
		}
		return n, werr
	}
}

// spun is what a spinner does after its i-th fruitless poll: every
// spinPollEvery polls it looks at the parked sockets, and it yields.
func (s *spinners) spun(i int) {
	if i%spinPollEvery == 0 {
		s.wakeParked()
	}
	yield(i)
}

// yield gives way between a spinner's polls: to the process's other
// goroutines always (runtime.Gosched), and, after the first few polls, to
// other processes too (sched_yield(2)). A rank spins on a core of its own
// only while the machine is quiet; when other work lands on its core, often
// that work is the very peer it waits for, and a spinner that never let go
// of the core would halve both. With the core to itself, sched_yield
// returns at once.
func yield(spins int) {
	runtime.Gosched()
	if spins > spinPoliteAfter {
		syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
	}
}

// spinPoliteAfter is how many polls a spinner makes before it also yields
// to other processes: a few microseconds, about what a small message takes
// to cross loopback.
const spinPoliteAfter = 4

// advance drops the first m bytes of bufs.
func advance(bufs [][]byte, m int) [][]byte {
	for m > 0 && len(bufs) > 0 {
		if m < len(bufs[0]) {
			bufs[0] = bufs[0][m:]
			return bufs
		}
		m -= len(bufs[0])
		bufs = bufs[1:]
	}
	for len(bufs) > 0 && len(bufs[0]) == 0 {
		bufs = bufs[1:]
	}
	return bufs
}

// writev is writev(2) on bufs, with iov as scratch. It is not
// unix.Writev, whose race-detector annotations come after the call (see
// race_on.go); raceSent has annotated bufs already.
func writev(fd int, bufs [][]byte, iov *[]unix.Iovec) (int, error) {
	v := (*iov)[:0]
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		e := unix.Iovec{Base: &b[0]}
		e.SetLen(len(b))
		v = append(v, e)
	}
	*iov = v
	if len(v) == 0 {
		return 0, nil
	}
	n, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&v[0])), uintptr(len(v)))
	runtime.KeepAlive(bufs)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
