// The unary calls a worker makes: hello, bye and abort.

package ps

import (
	"context"
	"fmt"

	"github.com/distbench/distbench/internal/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func (s *server) hello(ctx context.Context, req *frame) (*frame, error) {
	l, err := s.unary(ctx, req, kindHello)
	if err != nil {
		return nil, err
	}
	h := &req.h
	if int(h.aux) != s.index || int(h.contrib) != s.workers {
		return nil, status.Errorf(codes.FailedPrecondition,
			"worker rank %d expects server %d of a %d-worker job, but this is server %d of a %d-worker job (a stale address in the store?)",
			h.rank, h.aux, h.contrib, s.index, s.workers)
	}
	s.hold(l)
	if err := s.failed(); err != nil {
		return nil, s.statusOf(err)
	}
	return &frame{h: header{kind: kindAck, rank: uint32(s.index), contrib: uint32(s.workers)}}, nil
}

func (s *server) bye(ctx context.Context, req *frame) (*frame, error) {
	l, err := s.unary(ctx, req, kindBye)
	if err != nil {
		return nil, err
	}
	s.goodbye(l.rank)
	return &frame{h: header{kind: kindAck, rank: uint32(s.index)}}, nil
}

// unary checks a unary call's request: its kind, its sender's rank, and
// that it carries no more payload than it says.
func (s *server) unary(ctx context.Context, req *frame, want kind) (*link, error) {
	l, err := sender(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case req.h.kind != want:
		err = fmt.Errorf("a %s call carries a %s message", want, req.h.kind)
	case uint64(req.payloadLen()) != req.h.length:
		err = fmt.Errorf("%s message announces %d payload bytes but carries %d", req.h.kind, req.h.length, req.payloadLen())
	default:
		err = l.claims(&req.h)
	}
	if err != nil {
		return nil, s.refuse(l.String(), err)
	}
	return l, nil
}

// goodbye records that a worker has closed; once all have, the job is over.
func (s *server) goodbye(rank uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byes[rank] || int(rank) >= s.workers {
		return
	}
	s.byes[rank] = true
	if len(s.byes) == s.workers {
		close(s.done)
	}
}

func (s *server) abort(ctx context.Context, req *frame) (*frame, error) {
	l, err := s.unary(ctx, req, kindAbort)
	if err != nil {
		return nil, err
	}
	var why []byte
	for _, seg := range req.segs {
		why = append(why, seg...)
	}
	s.fail(fmt.Errorf("worker rank %d aborted: %s", l.rank, wire.Sanitize(string(why), maxAbortText)))
	return &frame{h: header{kind: kindAck, rank: uint32(s.index)}}, nil
}
