package core

import (
	"context"
	"fmt"

	"github.com/distbench/distbench/collective"
)

// Point-to-point messages live in their own tag space: the top bit set, the
// group id, and the user's tag. They run on per-peer queues, not on the
// collective executor, so that isend/irecv pairs issued on both sides in any
// order cannot deadlock behind each other or behind a collective; per-peer
// queues keep messages with equal tags matched in issue order.
const maxUserTag = 1<<40 - 1

func (g *Group) p2pTag(tag int) uint64 {
	return 1<<63 | uint64(g.id)<<40 | uint64(tag)
}

func (g *Group) checkP2P(op string, t collective.Tensor, peer, tag int) error {
	if err := checkTensor("tensor", t); err != nil {
		return err
	}
	if peer < 0 || peer >= g.Size() || peer == g.rank {
		return fmt.Errorf("%s peer %d out of range (accepted: 0..%d except %d, this rank)", op, peer, g.Size()-1, g.rank)
	}
	if tag < 0 || tag > maxUserTag {
		return fmt.Errorf("tag %d out of range (accepted: 0..%d)", tag, maxUserTag)
	}
	return nil
}

func (g *Group) p2p(ctx context.Context, op string, queues map[int]*serial, peer, tag int, t collective.Tensor,
	do func(ctx context.Context, global int, tag uint64, data []byte) error) collective.Work {
	if err := g.checkP2P(op, t, peer, tag); err != nil {
		return failed(g.invalidErr(op, "%v", err))
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return failed(g.opErr(op, 0, collective.ErrClosed))
	}
	q := queues[peer]
	if q == nil {
		q = newSerial()
		queues[peer] = q
	}
	key := [2]int{peer, len(op)} // "send" and "recv" differ in length
	seq := g.p2pSeq[key]
	g.p2pSeq[key]++
	g.mu.Unlock()
	w := newWork()
	ok := q.submit(func() {
		if err := g.shared.failed(); err != nil {
			w.finish(g.opErr(op, seq, fmt.Errorf("communicator failed earlier: %w", err)))
			return
		}
		cctx, cancel := context.WithTimeout(ctx, g.shared.cfg.OpTimeout())
		defer cancel()
		err := p2pStaged(op, t, t.Data, func(data []byte) error { return do(cctx, g.ranks[peer], g.p2pTag(tag), data) })
		if err != nil {
			err = g.explainP2P(cctx, g.ranks[peer], err)
			err = g.opErr(fmt.Sprintf("%s (tag %d)", op, tag), seq, g.peerErr(peer, err))
			g.shared.fail(err)
		}
		w.finish(err)
	})
	if !ok {
		w.finish(g.opErr(op, seq, collective.ErrClosed))
	}
	return w
}

func (g *Group) ISend(ctx context.Context, t collective.Tensor, dst, tag int) collective.Work {
	return g.p2p(ctx, "send", g.sendQ, dst, tag, t, g.shared.trSend)
}

func (g *Group) IRecv(ctx context.Context, t collective.Tensor, src, tag int) collective.Work {
	return g.p2p(ctx, "recv", g.recvQ, src, tag, t, g.shared.trRecv)
}

func (g *Group) Send(ctx context.Context, t collective.Tensor, dst, tag int) error {
	return g.ISend(ctx, t, dst, tag).Wait(ctx)
}

func (g *Group) Recv(ctx context.Context, t collective.Tensor, src, tag int) error {
	return g.IRecv(ctx, t, src, tag).Wait(ctx)
}

func (s *shared) trSend(ctx context.Context, peer int, tag uint64, data []byte) error {
	return s.tr.Send(ctx, peer, tag, data)
}

func (s *shared) trRecv(ctx context.Context, peer int, tag uint64, data []byte) error {
	return s.tr.Recv(ctx, peer, tag, data)
}
