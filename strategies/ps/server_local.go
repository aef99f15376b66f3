// The colocated worker's direct calls, which take the streams' paths
// without gRPC.

package ps

import (
	"context"
	"errors"
	"fmt"

	"github.com/distbench/distbench/collective"
	"google.golang.org/grpc/mem"
)

// localPush is push for the worker this server is colocated with: the same
// path as a Push stream's, straight from the worker's memory.
func (s *server) localPush(ctx context.Context, h header, pieces []piece) error {
	var st pushState
	var segs [1][]byte
	for _, p := range pieces {
		h.offset, h.length = uint64(p.offset), uint64(len(p.data))
		segs[0] = p.data
		if err := s.accept(&st, &h, segs[:]); err != nil {
			return s.rejectLocal(h.rank, err)
		}
	}
	if st.r != nil {
		st.r.noteDone(st.rank)
	}
	if err := s.finish(ctx, &st); err != nil {
		return s.rejectLocal(h.rank, err)
	}
	return nil
}

// localPull is pull for the colocated worker: it copies into dst.
func (s *server) localPull(ctx context.Context, h header, dst []byte) error {
	var err error
	switch h.kind {
	case kindPull:
		var r *round
		if r, err = s.round(&h); err == nil {
			err = r.read(ctx, int(h.offset), int(h.length), func(lo, hi int) error {
				copy(dst[lo-int(h.offset):], r.result(lo, hi))
				return nil
			})
		}
	case kindParams:
		var p *paramShard
		if p, err = s.paramsFor(&h); err == nil {
			pool := mem.DefaultBufferPool()
			err = s.pullParams(ctx, p, &h, func(lo int, b *[]byte) error {
				copy(dst[lo-int(h.offset):], *b)
				pool.Put(b)
				return nil
			})
		}
	default:
		err = fmt.Errorf("%w: a pull cannot ask for %s", collective.ErrInvalid, h.kind)
	}
	if err != nil {
		return s.rejectLocal(h.rank, err)
	}
	return nil
}

// rejectLocal is reject for the colocated worker.
func (s *server) rejectLocal(rank uint32, err error) error {
	var je *jobError
	if !errors.As(err, &je) {
		err = fmt.Errorf("worker rank %d (in-process): %w", rank, err)
		s.fail(err)
	}
	return err
}
