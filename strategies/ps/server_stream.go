// The Push and Pull streams: pieces of a round or of a parameter shard,
// accepted into accumulators and read back as they complete.

package ps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/distbench/distbench/collective"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// round returns the round a message belongs to, making it on first use.
func (s *server) round(h *header) (*round, error) {
	r, _, err := s.roundFor(h, nil)
	return r, err
}

// roundFor returns the round a message belongs to, making it on first use
// (made reports whether it did): with an accumulator from the pool, or,
// when lend is set, in the memory its colocated worker lends (see lendLocal).
func (s *server) roundFor(h *header, lend []byte) (r *round, made bool, err error) {
	key := roundKey{h.group, h.seq}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure != nil {
		return nil, false, s.failure
	}
	if r := s.rounds[key]; r != nil {
		return r, false, r.matches(h)
	}
	switch {
	case h.shard == 0 || h.contrib == 0:
		return nil, false, fmt.Errorf("round %s: rank %d announced an empty shard or no contributions", key, h.rank)
	case int(h.contrib) > s.workers:
		return nil, false, fmt.Errorf("round %s: rank %d announced %d contributions per element in a %d-worker job", key, h.rank, h.contrib, s.workers)
	case h.pull > h.shard*uint64(s.workers):
		return nil, false, fmt.Errorf("round %s: rank %d announced %d bytes to pull from a %d-byte shard, more than %d workers pull", key, h.rank, h.pull, h.shard, s.workers)
	}
	var acc []byte
	if lend == nil {
		if err := s.reserve(int(h.shard), fmt.Sprintf("round %s", key)); err != nil {
			return nil, false, err
		}
		acc = s.pool.get(int(h.shard))
	}
	r = newRound(s, key, h, acc)
	if lend != nil {
		if len(lend) != r.shard || r.op == 0 {
			return nil, false, fmt.Errorf("round %s: the colocated worker lent %d bytes to a %d-byte %s round", key, len(lend), r.shard, describeDesc(&r.desc))
		}
		r.lendFrom(lend)
	}
	s.rounds[key] = r
	return r, true, nil
}

// release forgets a round whose every byte has been pulled.
func (s *server) release(r *round) {
	s.mu.Lock()
	if s.rounds[r.key] == r {
		delete(s.rounds, r.key)
	}
	s.mu.Unlock()
}

// pushState follows one push stream (or one in-process push).
type pushState struct {
	kind  kind
	rank  uint32
	r     *round
	p     *paramShard
	step  int64
	bytes int
	// applied: some message of the stream has changed the server's state,
	// so a later error leaves a round or step that cannot complete.
	applied bool
}

// accept takes one pushed message.
func (s *server) accept(st *pushState, h *header, segs [][]byte) error {
	if n := segLen(segs); uint64(n) != h.length {
		return fmt.Errorf("%s message announces %d payload bytes but carries %d", h.kind, h.length, n)
	}
	if int(h.rank) >= s.workers {
		return fmt.Errorf("%s message from rank %d of a %d-worker job", h.kind, h.rank, s.workers)
	}
	if st.kind == 0 {
		st.kind, st.rank = h.kind, h.rank
	} else if h.kind != st.kind || h.rank != st.rank {
		return fmt.Errorf("a push stream from rank %d carrying %s switched to %s from rank %d", st.rank, st.kind, h.kind, h.rank)
	}
	switch h.kind {
	case kindPush:
		if err := s.pushRound(st, h); err != nil {
			return err
		}
		if err := st.r.put(h, segs); err != nil {
			return err
		}
		st.bytes += int(h.length)
		st.applied = st.applied || h.length > 0
		return nil
	case kindInit, kindGrad:
		return s.acceptParams(st, h, segs)
	}
	return fmt.Errorf("a push stream cannot carry %s messages", h.kind)
}

// pushRound checks a pushed piece and finds the round it belongs to (the
// push's, from its first piece on), as st.r.
func (s *server) pushRound(st *pushState, h *header) error {
	if err := pieceErr(h); err != nil {
		return err
	}
	if st.r == nil {
		r, err := s.round(h)
		if err != nil {
			return err
		}
		st.r = r
		r.noteRank(h.rank)
		return nil
	}
	if st.r.key != (roundKey{h.group, h.seq}) {
		return fmt.Errorf("a push for round %s switched to round %s", st.r.key, roundKey{h.group, h.seq})
	}
	return st.r.matches(h)
}

// serveUntil waits until every worker has said goodbye (nil) or ctx ends
// (an error saying how many had not, naming the server as where).
func (s *server) serveUntil(ctx context.Context, where string) error {
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		said := len(s.byes)
		s.mu.Unlock()
		return fmt.Errorf("%s: server %d (%s): stopped with %d of %d workers still connected: %w",
			Name, s.index, where, s.workers-said, s.workers, ctx.Err())
	}
}

// pieceErr checks a pushed piece against its header's own chunk grid, before
// the piece makes a round: not empty, within one chunk, and a whole chunk
// if reduced.
func pieceErr(h *header) error {
	off, n, chunk, shard := h.offset, h.length, uint64(h.chunk), h.shard
	if n == 0 {
		return fmt.Errorf("round %s: rank %d pushed an empty piece at offset %d", roundKey{h.group, h.seq}, h.rank, off)
	}
	c := off / chunk
	lo, hi := c*chunk, min((c+1)*chunk, shard)
	if off+n > hi {
		return fmt.Errorf("round %s: rank %d's piece [%d, %d) crosses the end of chunk %d [%d, %d)", roundKey{h.group, h.seq}, h.rank, off, off+n, c, lo, hi)
	}
	if h.op != 0 && (off != lo || off+n != hi) {
		return fmt.Errorf("round %s: rank %d's piece [%d, %d) of a reduction is not chunk %d [%d, %d)", roundKey{h.group, h.seq}, h.rank, off, off+n, c, lo, hi)
	}
	return nil
}

// finish ends a push that delivered all its messages.
func (s *server) finish(ctx context.Context, st *pushState) error {
	if st.p != nil {
		return st.p.finish(ctx, st)
	}
	return nil
}

func segLen(segs [][]byte) int {
	n := 0
	for _, s := range segs {
		n += len(s)
	}
	return n
}

// statusOf turns a server-side error into the status a worker sees.
func (s *server) statusOf(err error) error {
	code := codes.Aborted
	switch {
	case errors.Is(err, collective.ErrTimeout):
		code = codes.DeadlineExceeded
	case errors.Is(err, collective.ErrMismatch), errors.Is(err, collective.ErrInvalid):
		code = codes.FailedPrecondition
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	}
	return status.Error(code, err.Error())
}

// push serves a Push stream: every message is taken as it arrives, reduced
// or copied straight from gRPC's receive buffers, which are then released.
func (s *server) push(stream grpc.ServerStream) error {
	ctx := stream.Context()
	l, err := sender(ctx)
	if err != nil {
		return err
	}
	var st pushState
	var got int64 // payload bytes received, for WireBytes
	f := frame{lenient: true}
	for {
		err := stream.RecvMsg(&f)
		if err == io.EOF {
			break
		}
		got += int64(f.payloadLen())
		if err != nil {
			if status.Code(err) == codes.ResourceExhausted && !st.applied {
				return s.refuse(l.String(), err) // a message over the size limit
			}
			// The worker went away mid-push: the round can never complete.
			return s.reject(l.String(), fmt.Errorf("went away during a push (%d bytes in): %w", st.bytes, err))
		}
		err = f.bad
		if err == nil {
			err = l.claims(&f.h)
		}
		if err == nil {
			err = s.accept(&st, &f.h, f.segs)
		}
		f.release()
		if err != nil {
			if !st.applied {
				return s.refuse(l.String(), err)
			}
			return s.reject(l.String(), err)
		}
	}
	if st.r != nil {
		st.r.noteDone(st.rank)
	}
	fctx, cancel := earlier(ctx)
	defer cancel()
	if err := s.finish(fctx, &st); err != nil {
		return s.reject(l.String(), err)
	}
	s.wire.recv.Add(got) // before the ack ends the worker's push
	return stream.SendMsg(&frame{h: header{kind: kindAck, rank: uint32(s.index)}})
}

// earlier returns ctx with its deadline moved a little earlier, so that a
// wait that runs out on the server usually reports what it waited for to
// the worker before the worker's own deadline cuts the stream. When it
// does not (the request arrived late on a loaded machine), the worker asks
// with a why instead (serverConn.explain).
func earlier(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(max(time.Until(dl)/20, 20*time.Millisecond), time.Second)
	return context.WithDeadline(ctx, dl.Add(-margin))
}

// pull serves a Pull stream: one request, then the range in pieces of at
// most a chunk, each sent as soon as its chunk is complete.
func (s *server) pull(stream grpc.ServerStream) error {
	ctx, cancel := earlier(stream.Context())
	defer cancel()
	l, err := sender(ctx)
	if err != nil {
		return err
	}
	req := frame{lenient: true}
	if err := stream.RecvMsg(&req); err != nil {
		return err
	}
	h := req.h
	n := req.payloadLen()
	var sent int64 // payload bytes sent, for WireBytes
	req.release()
	switch {
	case req.bad != nil:
		return s.refuse(l.String(), req.bad)
	case n != 0:
		return s.refuse(l.String(), fmt.Errorf("%s request carries %d payload bytes", h.kind, n))
	}
	if err := l.claims(&h); err != nil {
		return s.refuse(l.String(), err)
	}
	switch h.kind {
	case kindPull:
		r, err := s.round(&h)
		if err != nil {
			return s.refuse(l.String(), err)
		}
		err = r.read(ctx, int(h.offset), int(h.length), func(lo, hi int) error {
			out := frame{h: h, buf: r.lend(lo, hi)}
			out.h.offset, out.h.length = uint64(lo), uint64(hi-lo)
			sent += int64(hi - lo)
			err := stream.SendMsg(&out)
			if out.buf != nil { // not handed to gRPC
				out.buf.Free()
			}
			return err
		})
		if err != nil {
			// A pull ends early only when its worker failed or gave up.
			return s.reject(l.String(), err)
		}
	case kindParams:
		p, err := s.paramsFor(&h)
		if err != nil {
			return s.refuse(l.String(), err)
		}
		err = s.pullParams(ctx, p, &h, func(lo int, b *[]byte) error {
			out := frame{h: h, buf: mem.NewBuffer(b, mem.DefaultBufferPool())}
			out.h.offset, out.h.length = uint64(lo), uint64(len(*b))
			sent += int64(len(*b))
			err := stream.SendMsg(&out)
			if out.buf != nil {
				out.buf.Free()
			}
			return err
		})
		if err != nil {
			return s.reject(l.String(), err)
		}
	default:
		return s.refuse(l.String(), fmt.Errorf("a pull cannot ask for %s", h.kind))
	}
	s.wire.sent.Add(sent) // before the stream's end completes the worker's pull
	return nil
}
