// Liveness: read deadlines and probes that tell a silent peer from a
// slow one, heartbeats, a peer's goodbye or abort, and how a broken
// connection is described in a PeerError.

package transport

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/wire"
)

// deadlineReader pushes the read deadline out as bytes arrive, so a large
// message may take as long as it needs while a silent peer is caught. A
// deadline is when this rank looks at the peer, not yet a verdict: see
// silent.
type deadlineReader struct {
	c            *net.TCPConn
	p            *peer
	timeout      time.Duration // PeerTimeout; <= 0: none
	probeTimeout time.Duration
	set          time.Time // when the deadline was last pushed
	probed       time.Time // when the silent peer was probed; zero if it was not

	// With Spin (see spin.go; nil raw: never spins). Used by the reader
	// goroutine only, except end's atomics.
	spin        time.Duration
	raw         syscall.RawConn
	end         *spinEnd
	spinners    *spinners
	activeUntil int64 // unix ns: poll instead of parking until then
	nextLook    int64 // unix ns: when to next yield and look at parked sockets
}

func (d *deadlineReader) Read(b []byte) (int, error) {
	var start time.Time // when this read began to wait
	for {
		if d.timeout > 0 {
			// Pushing the deadline costs a little; doing it every eighth
			// of the timeout is enough, since silent measures the
			// silence itself.
			now := time.Now()
			if start.IsZero() {
				start = now
			}
			if d.probed.IsZero() && now.Sub(d.set) > d.timeout/8 {
				d.set = now
				d.c.SetReadDeadline(now.Add(d.timeout))
			}
		}
		var n int
		var err error
		if d.raw != nil && len(b) > 0 {
			n, err = d.spinRead(b)
		} else {
			n, err = d.c.Read(b)
		}
		if d.end.wasKicked(err) {
			d.set = time.Time{} // restore the deadline on the next pass
			if d.timeout <= 0 {
				d.c.SetReadDeadline(time.Time{})
			} else if !d.probed.IsZero() {
				d.c.SetReadDeadline(d.probed.Add(d.probeTimeout))
			}
			continue
		}
		if n > 0 {
			raceReceived()
			if !d.probed.IsZero() {
				d.heard(start)
			}
		}
		if err != nil && d.timeout > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			if err = d.silent(start); err == nil {
				continue
			}
		}
		return n, err
	}
}

// silent decides what a read deadline means, for a read that began to wait
// at start. Bytes waiting in the socket mean that this rank was late (starved,
// or stopped, itself), not the peer. A peer silent for PeerTimeout is
// probed; one that stays silent for ProbeTimeout after that is declared dead.
// A starved process answers late; only a stopped, hung or cut-off one never
// does. It returns nil to read on.
func (d *deadlineReader) silent(start time.Time) error {
	now := time.Now()
	switch {
	case bytesWaiting(d.c):
		d.set = time.Time{}
		if !d.probed.IsZero() {
			d.c.SetReadDeadline(now.Add(d.probeTimeout))
		}
	case d.probed.IsZero() && now.Sub(start) < d.timeout:
		// The deadline was pushed before this read began.
		d.set = now
		d.c.SetReadDeadline(start.Add(d.timeout))
	case d.probed.IsZero():
		d.probed = now
		d.p.t.o.Logf("transport: rank %d: %s has sent nothing for %v; probing it", d.p.t.o.Rank, d.p.describe(), now.Sub(start).Round(time.Millisecond))
		select {
		case d.p.probe <- struct{}{}:
		default:
		}
		d.c.SetReadDeadline(now.Add(d.probeTimeout))
	case now.Sub(d.probed) < d.probeTimeout:
		d.c.SetReadDeadline(d.probed.Add(d.probeTimeout))
	default:
		return &silenceError{silence: now.Sub(start), probedAfter: d.probed.Sub(start), probeTimeout: d.probeTimeout}
	}
	return nil
}

// heard ends a probe: the peer has sent something, so it is alive.
func (d *deadlineReader) heard(start time.Time) {
	d.p.t.o.Logf("transport: rank %d: %s sent again after %v of silence: slow, not dead", d.p.t.o.Rank, d.p.describe(), time.Since(start).Round(time.Millisecond))
	d.probed, d.set = time.Time{}, time.Time{}
}

// silenceError is a peer declared dead: silent for PeerTimeout, then for
// ProbeTimeout after a probe.
type silenceError struct {
	silence, probedAfter, probeTimeout time.Duration
}

func (e *silenceError) Error() string {
	return fmt.Sprintf("sent nothing for %v, nor answered a probe within %v", e.silence.Round(time.Millisecond), e.probeTimeout)
}

// sawData keeps the reader polling for Spin after a data frame (not after a
// heartbeat: a link that carries only heartbeats should not spin).
func (d *deadlineReader) sawData() {
	if d.raw != nil {
		d.activeUntil = time.Now().Add(d.spin).UnixNano()
	}
}

// peerAborted fails the whole job: every receive, from every peer, and every
// send, with an error that names the peer that aborted and why.
func (t *TCP) peerAborted(p *peer, text string) {
	perr := p.peerErr(fmt.Errorf("%w: %s", collective.ErrAborted, text))
	p.setErr(perr)
	t.mu.Lock()
	if t.jobErr == nil {
		t.jobErr = perr
		t.broken.Store(true)
		close(t.jobFailed)
	}
	t.mu.Unlock()
	t.o.Logf("transport: rank %d: %v", t.o.Rank, perr)
	if !t.ready.Load() {
		// The mesh is still forming and some mailboxes may not exist yet:
		// NewTCP sees jobFailed and fails with perr instead.
		return
	}
	p.after(func() {
		for _, q := range t.peers {
			if q != nil {
				q.box.Fail(perr)
			}
		}
	})
}

// answerBye shuts our side of a connection whose peer said goodbye, once any
// send in progress has finished, so that its reader sees EOF and its Close
// returns without waiting out its timeout.
func (t *TCP) answerBye(p *peer) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if !p.lockWithin(t.o.CloseTimeout) {
			p.conn.Close()
			return
		}
		if !p.wclosed {
			p.wclosed = true
			p.conn.CloseWrite()
		}
		p.unlock()
	}()
}

// heartbeat keeps an idle connection visibly alive, and probes the peer
// when the reader asks.
func (t *TCP) heartbeat(p *peer) {
	defer t.wg.Done()
	every := t.o.HeartbeatInterval
	var tick <-chan time.Time // nil, which never fires, without heartbeats
	if every > 0 {
		tk := time.NewTicker(every / 2)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		select {
		case <-t.done:
			return
		case <-p.exited:
			return
		case <-p.probe:
			t.sendProbe(p)
			continue
		case <-tick:
		}
		if time.Since(t.epoch)-time.Duration(p.lastWrite.Load()) < every/2 {
			continue
		}
		select {
		case p.wmu <- struct{}{}:
		default:
			continue // a send is writing: that is a sign of life too
		}
		if p.err() == nil && !p.wclosed {
			t.writeControl(p, "a heartbeat", wire.Header{Kind: wire.KindHeartbeat}, nil, time.Now().Add(every))
		}
		p.unlock()
	}
}

// probeID is the wait query id of a probe, which no diagnosis uses: the
// reply only shows that the peer is alive.
const probeID = 0

// sendProbe sends a silent peer a wait query, which its reader answers at
// once. It waits for the write lock: a send that holds it ends by its own
// deadline.
func (t *TCP) sendProbe(p *peer) {
	select {
	case p.wmu <- struct{}{}:
	case <-t.done:
		return
	case <-p.exited:
		return
	}
	if p.err() == nil && !p.wclosed {
		t.writeControl(p, "a probe", wire.Header{Kind: wire.KindWaitQuery, Tag: probeID}, nil, time.Now().Add(t.o.ProbeTimeout))
	}
	p.unlock()
}

// describeNetErr turns a read or write error into the cause a PeerError
// carries.
func (t *TCP) describeNetErr(err error) error {
	switch {
	case err == io.EOF:
		return errors.New("closed the connection")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("closed the connection mid-message")
	case isReset(err):
		return fmt.Errorf("reset the connection (%v)", err)
	}
	if se := (*silenceError)(nil); errors.As(err, &se) {
		return &collective.TimeoutError{After: se.silence, Waiting: "any data or heartbeat",
			Cause: fmt.Sprintf("nor did it answer a probe sent after %v of silence within %v: stopped, hung or cut off (a starved process answers late)",
				se.probedAfter.Round(time.Millisecond), se.probeTimeout)}
	}
	return err
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
