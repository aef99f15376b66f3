// Shutdown: Close and Abort say goodbye to every peer and wait for
// its answer.

package transport

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/wire"
)

// Abort tells every peer that the job failed with err, so that their
// pending and later operations fail now with a PeerError naming this rank
// and err, and closes the transport. Local receives fail with
// collective.ErrClosed.
func (t *TCP) Abort(err error) {
	if err == nil {
		err = errors.New("aborted")
	}
	t.shutdown(err)
}

// Close says goodbye to every peer (so that none reports an error), waits
// up to CloseTimeout for them to acknowledge, and releases the connections.
// Pending receives fail with collective.ErrClosed. It is idempotent.
func (t *TCP) Close() error {
	t.shutdown(nil)
	return nil
}

func (t *TCP) shutdown(abortErr error) {
	t.shutOnce.Do(func() {
		t.mu.Lock()
		failed := abortErr != nil || t.jobErr != nil
		t.closed = true
		t.broken.Store(true)
		t.mu.Unlock()
		close(t.done)

		local := collective.ErrClosed
		bye := wire.Header{Kind: wire.KindClose}
		var text []byte
		if abortErr != nil {
			local = fmt.Errorf("%w (this rank aborted: %v)", collective.ErrClosed, abortErr)
			text = []byte(wire.Sanitize(abortErr.Error(), wire.MaxAbortText))
			bye = wire.Header{Kind: wire.KindAbort, Length: uint64(len(text))}
		}
		var live []*peer
		for _, p := range t.peers {
			if p != nil && p.box != nil {
				p.box.Fail(local)
				if p.conn != nil {
					live = append(live, p)
				}
			}
		}

		// Goodbye frame, then half-close: the peer reads everything we
		// sent, answers with its own half-close, and its reader and ours
		// both end at EOF. Closing outright could reset the connection
		// and lose the frame in the peer's receive buffer.
		wait := t.o.CloseTimeout
		if failed {
			// A failed job's ranks are ending anyway: a live peer answers
			// within milliseconds, and one that is stopped never will, so
			// waiting for it would only delay every rank's exit.
			wait = min(wait, FailedCloseTimeout)
		}
		deadline := time.Now().Add(wait)
		var wg sync.WaitGroup
		for _, p := range live {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !p.lockWithin(time.Until(deadline)) {
					p.conn.Close() // a send is stuck: no clean goodbye possible
					return
				}
				defer p.unlock()
				if p.wclosed {
					return
				}
				p.wclosed = true
				if p.err() == nil || p.gotBye.Load() {
					if _, err := p.writeLocked(bye, text, deadline); err != nil {
						p.conn.Close()
						return
					}
				}
				p.conn.CloseWrite()
			}()
		}
		wg.Wait()
		tm := time.NewTimer(time.Until(deadline))
		for _, p := range live {
			select {
			case <-p.exited:
				continue
			case <-tm.C:
			}
			break // out of time: close the rest outright
		}
		tm.Stop()
		for _, p := range live {
			p.conn.Close()
		}
		t.stopShm(deadline)
		t.wg.Wait()
	})
}
