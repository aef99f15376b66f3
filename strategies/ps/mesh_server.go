// The parameter-server protocol over the job's transport mesh: a server's
// side.

package ps

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"google.golang.org/grpc/mem"
)

// meshServer serves one server's shards to the workers over the mesh: per
// worker, a loop that takes its requests in order and a responder that
// answers its pulls in order, so that a pull waiting for other workers'
// pushes never holds up this worker's next push.
type meshServer struct {
	s       *server
	tr      driver.Transport
	timeout time.Duration // bounds each pull and each push's payload

	ctx    context.Context // ends when the server stops
	cancel context.CancelFunc
	wg     sync.WaitGroup
	abort  sync.Once
}

func newMeshServer(s *server, tr driver.Transport, timeout time.Duration) *meshServer {
	m := &meshServer{s: s, tr: tr, timeout: timeout}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// start serves the workers of mesh ranks 0..workers-1, but skip (the
// colocated worker, which calls in directly; -1 for none).
func (m *meshServer) start(workers, skip int) {
	for w := range workers {
		if w != skip {
			m.wg.Add(1)
			go m.serve(w)
		}
	}
}

// stop ends every loop and waits for them.
func (m *meshServer) stop() {
	m.cancel()
	m.wg.Wait()
}

func (m *meshServer) who(w int) string {
	return "worker " + m.s.whereIs(uint32(w))
}

// fail latches err as the job's failure on this server and aborts the
// mesh with it, so that every worker, waiting on this server or not,
// fails now with the cause rather than at its deadline.
func (m *meshServer) fail(err error) {
	m.s.fail(err)
	m.abort.Do(func() {
		if m.ctx.Err() == nil {
			m.tr.Abort(fmt.Errorf("ps server %d: %w", m.s.index, err))
		}
	})
}

// lost handles an error of the mesh while serving worker w: nothing once
// the server has stopped, the job's end for an abort (another rank's, which
// carries its own cause), and the job's failure, naming w, otherwise.
func (m *meshServer) lost(w int, err error) {
	switch {
	case m.ctx.Err() != nil:
	case errors.Is(err, collective.ErrAborted):
		m.s.failQuietly(err)
	default:
		m.fail(fmt.Errorf("%s: %w", m.who(w), err))
	}
}

// serve takes worker w's requests until its goodbye, the server's stop,
// or a failure.
func (m *meshServer) serve(w int) {
	defer m.wg.Done()
	pulls := make(chan header, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.respond(w, pulls)
	}()
	defer func() {
		close(pulls)
		<-done
	}()
	var st pushState
	hb := make([]byte, headerSize, headerSize+maxName)
	for {
		h, err := m.next(w, hb)
		if err != nil {
			m.lost(w, err)
			return
		}
		switch h.kind {
		case kindSpan:
			err = m.acceptSpan(w, &st, &h)
		case kindInit, kindGrad:
			err = m.accept(w, &st, &h)
		case kindDone:
			training := st.p != nil
			err = m.finish(&st)
			if training { // acknowledged: taken, or why not
				text := ""
				if err != nil {
					text = err.Error()
				}
				ctx, cancel := context.WithTimeout(m.ctx, m.timeout)
				if serr := sendAnswer(ctx, m.tr, w, meshAcks, text); err == nil {
					err = serr
				}
				cancel()
			}
		case kindPull, kindParams:
			select {
			case pulls <- h:
			case <-m.ctx.Done():
				return
			}
		case kindWhy:
			ctx, cancel := context.WithTimeout(m.ctx, diagnosisBudget(m.timeout))
			err = sendAnswer(ctx, m.tr, w, meshWhy, m.s.whyText(&h))
			cancel()
		case kindBye:
			m.s.goodbye(h.rank)
			return
		default:
			err = fmt.Errorf("a request cannot be a %s message", h.kind)
		}
		if err != nil {
			m.fail(fmt.Errorf("%s: %w", m.who(w), err))
			return
		}
	}
}

// next receives worker w's next request header, which must be its own.
func (m *meshServer) next(w int, hb []byte) (header, error) {
	hb = hb[:headerSize]
	if err := m.tr.Recv(m.ctx, w, meshRequests, hb); err != nil {
		return header{}, err
	}
	if n := int(binary.LittleEndian.Uint16(hb[6:])); n > 0 {
		if n > maxName {
			return header{}, fmt.Errorf("ps: key of %d bytes exceeds the limit of %d", n, maxName)
		}
		hb = hb[:headerSize+n]
		if err := m.tr.Recv(m.ctx, w, meshRequests, hb[headerSize:]); err != nil {
			return header{}, err
		}
	}
	h, _, err := decodeHeader(hb)
	if err != nil {
		return h, err
	}
	if int(h.rank) != w {
		return h, fmt.Errorf("a %s message claims to be from rank %d", h.kind, h.rank)
	}
	return h, nil
}

// accept takes one piece of a training push: its payload is received,
// then applied.
func (m *meshServer) accept(w int, st *pushState, h *header) error {
	var payload []byte
	if h.length > 0 {
		payload = make([]byte, h.length)
		ctx, cancel := context.WithTimeout(m.ctx, m.timeout)
		err := m.tr.Recv(ctx, w, meshRequests, payload)
		cancel()
		if err != nil {
			return err
		}
	}
	return m.s.accept(st, h, [][]byte{payload})
}

// acceptSpan takes a span of a collective's push: a receive is posted for
// each of its pieces at once, which the connection's reader reduces (or
// copies) straight into the round's accumulator as it reads it, without
// this loop waiting for it.
func (m *meshServer) acceptSpan(w int, st *pushState, span *header) error {
	if st.kind == 0 {
		st.kind, st.rank = kindPush, span.rank
	} else if st.kind != kindPush {
		return fmt.Errorf("a push carrying %s switched to a span", st.kind)
	}
	if span.length == 0 {
		return fmt.Errorf("round %s: rank %d pushed an empty span at offset %d", roundKey{span.group, span.seq}, span.rank, span.offset)
	}
	return gridPieces(int(span.offset), int(span.length), int(span.chunk), func(lo, hi int) error {
		h := *span
		h.kind, h.offset, h.length = kindPush, uint64(lo), uint64(hi-lo)
		return m.post(w, st, &h)
	})
}

// post posts the receive of one pushed piece.
func (m *meshServer) post(w int, st *pushState, h *header) error {
	if err := m.s.pushRound(st, h); err != nil {
		return err
	}
	r := st.r
	c := int(h.offset) / r.chunk
	lo, _ := r.chunkRange(c)
	off := int(h.offset) - lo
	// The receive's memory only tells the reader the message's size and
	// each part's position: absorb puts the bytes wherever the chunk's
	// accumulator is when they arrive.
	r.locks[c].Lock()
	buf := r.chunkMem(c)[off : off+int(h.length)]
	r.locks[c].Unlock()
	into := r.absorber(c, off, buf, func(err error) { m.fail(fmt.Errorf("%s: %w", m.who(w), err)) })
	if _, err := m.tr.PostRecvReduce(w, meshRequests, buf, driver.Reduction{Elem: r.dt.Size(), Into: into}); err != nil {
		return err
	}
	st.bytes += int(h.length)
	st.applied = true
	return nil
}

// finish ends a push.
func (m *meshServer) finish(st *pushState) error {
	defer func() { *st = pushState{} }()
	if st.r != nil {
		st.r.noteDone(st.rank)
	}
	ctx, cancel := context.WithTimeout(m.ctx, m.timeout)
	defer cancel()
	return m.s.finish(ctx, st)
}

// respond answers worker w's pulls in the order it asked.
func (m *meshServer) respond(w int, pulls <-chan header) {
	for h := range pulls {
		if m.ctx.Err() != nil {
			continue
		}
		if err := m.pull(w, &h); err != nil {
			m.lost(w, err)
		}
	}
}

// pull sends worker w the range h asks for, each piece as soon as it is
// complete: a round's straight from its accumulator, a training key's
// parameters from a copy (later updates change them).
func (m *meshServer) pull(w int, h *header) error {
	ctx, cancel := context.WithTimeout(m.ctx, m.timeout)
	defer cancel()
	if h.kind == kindPull {
		r, err := m.s.round(h)
		if err != nil {
			return err
		}
		return r.read(ctx, int(h.offset), int(h.length), func(lo, hi int) error {
			return m.tr.Send(ctx, w, meshResponses, r.result(lo, hi))
		})
	}
	p, err := m.s.paramsFor(h)
	if err != nil {
		return err
	}
	pool := mem.DefaultBufferPool()
	return m.s.pullParams(ctx, p, h, func(lo int, b *[]byte) error {
		err := m.tr.Send(ctx, w, meshResponses, *b)
		pool.Put(b)
		return err
	})
}
