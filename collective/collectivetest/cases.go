package collectivetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/exact"
)

func wrongErr(what string, wrong int64, total int) error {
	if wrong == 0 {
		return nil
	}
	return fmt.Errorf("%s: %d of %d elements wrong", what, wrong, total)
}

func testAllReduce(w *world) {
	for _, dt := range w.dtypes() {
		for _, op := range collective.Ops() {
			for _, count := range w.counts() {
				name := fmt.Sprintf("%s/%s/count=%d", dt, op, count)
				w.each(func(ctx context.Context, r int, c collective.Comm) error {
					t := collective.NewTensor(dt, count)
					exact.Fill(t, op, w.n, r, 0)
					if err := c.AllReduce(ctx, t, op); err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					return wrongErr(name, exact.CountWrong(t, op, w.n, 0), count)
				})
			}
		}
	}
}

func testAllReduceLarge(w *world) {
	ops := []collective.Op{collective.Sum, collective.Max}
	if w.o.Short {
		ops = ops[:1]
	}
	for _, op := range ops {
		w.each(func(ctx context.Context, r int, c collective.Comm) error {
			t := collective.NewTensor(collective.Float32, LargeCount)
			exact.Fill(t, op, w.n, r, 0)
			if err := c.AllReduce(ctx, t, op); err != nil {
				return err
			}
			return wrongErr(fmt.Sprintf("float32/%s/count=%d", op, LargeCount), exact.CountWrong(t, op, w.n, 0), LargeCount)
		})
	}
}

func roots(n int) []int {
	return slices.Compact([]int{0, n / 2, n - 1})
}

func testReduce(w *world) {
	for _, dt := range w.dtypes() {
		for _, op := range collective.Ops() {
			for _, count := range w.counts() {
				for _, root := range roots(w.n) {
					name := fmt.Sprintf("%s/%s/count=%d/root=%d", dt, op, count, root)
					w.each(func(ctx context.Context, r int, c collective.Comm) error {
						t := collective.NewTensor(dt, count)
						exact.Fill(t, op, w.n, r, 0)
						if err := c.Reduce(ctx, t, root, op); err != nil {
							return fmt.Errorf("%s: %w", name, err)
						}
						if r != root {
							return nil
						}
						return wrongErr(name, exact.CountWrong(t, op, w.n, 0), count)
					})
				}
			}
		}
	}
}

func testBroadcast(w *world) {
	for _, dt := range w.copyDTypes() {
		for _, count := range append(w.counts(), LargeCount) {
			for _, root := range roots(w.n) {
				if count == LargeCount && (dt != collective.Float32 || root != w.n-1) {
					continue
				}
				name := fmt.Sprintf("%s/count=%d/root=%d", dt, count, root)
				w.each(func(ctx context.Context, r int, c collective.Comm) error {
					t := collective.NewTensor(dt, count)
					if r == root {
						exact.FillPattern(t, root, 0)
					}
					if err := c.Broadcast(ctx, t, root); err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					return wrongErr(name, exact.CountPattern(t, root, 0), count)
				})
			}
		}
	}
}

func testAllGather(w *world) {
	for _, dt := range w.copyDTypes() {
		for _, count := range append(w.counts(), LargeCount/w.n) {
			for _, inplace := range []bool{false, true} {
				name := fmt.Sprintf("%s/count=%d/inplace=%v", dt, count, inplace)
				w.each(func(ctx context.Context, r int, c collective.Comm) error {
					out := collective.NewTensor(dt, count*w.n)
					in := collective.NewTensor(dt, count)
					if inplace {
						in = out.Slice(r*count, (r+1)*count)
					}
					exact.FillPattern(in, r, 0)
					if err := c.AllGather(ctx, out, in); err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					var wrong int64
					for src := range w.n {
						wrong += exact.CountPattern(out.Slice(src*count, (src+1)*count), src, 0)
					}
					return wrongErr(name, wrong, count*w.n)
				})
			}
		}
	}
}

func testReduceScatter(w *world) {
	for _, dt := range w.dtypes() {
		for _, op := range collective.Ops() {
			counts := w.counts()
			if dt == collective.Float32 && op == collective.Sum {
				counts = append(counts, LargeCount/w.n)
			}
			for _, count := range counts {
				for _, inplace := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s/count=%d/inplace=%v", dt, op, count, inplace)
					w.each(func(ctx context.Context, r int, c collective.Comm) error {
						in := collective.NewTensor(dt, count*w.n)
						exact.Fill(in, op, w.n, r, 0)
						out := collective.NewTensor(dt, count)
						if inplace {
							out = in.Slice(r*count, (r+1)*count)
						}
						if err := c.ReduceScatter(ctx, out, in, op); err != nil {
							return fmt.Errorf("%s: %w", name, err)
						}
						return wrongErr(name, exact.CountWrong(out, op, w.n, r*count), count)
					})
				}
			}
		}
	}
}

func testGather(w *world) {
	for _, dt := range w.copyDTypes() {
		for _, count := range w.counts() {
			for _, root := range roots(w.n) {
				name := fmt.Sprintf("%s/count=%d/root=%d", dt, count, root)
				w.each(func(ctx context.Context, r int, c collective.Comm) error {
					in := collective.NewTensor(dt, count)
					exact.FillPattern(in, r, 0)
					var out collective.Tensor
					if r == root {
						out = collective.NewTensor(dt, count*w.n)
					}
					if err := c.Gather(ctx, out, in, root); err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					if r != root {
						return nil
					}
					var wrong int64
					for src := range w.n {
						wrong += exact.CountPattern(out.Slice(src*count, (src+1)*count), src, 0)
					}
					return wrongErr(name, wrong, count*w.n)
				})
			}
		}
	}
}

func testScatter(w *world) {
	for _, dt := range w.copyDTypes() {
		for _, count := range w.counts() {
			for _, root := range roots(w.n) {
				name := fmt.Sprintf("%s/count=%d/root=%d", dt, count, root)
				w.each(func(ctx context.Context, r int, c collective.Comm) error {
					var in collective.Tensor
					if r == root {
						in = collective.NewTensor(dt, count*w.n)
						exact.FillPattern(in, root, 0)
					}
					out := collective.NewTensor(dt, count)
					if err := c.Scatter(ctx, out, in, root); err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					return wrongErr(name, exact.CountPattern(out, root, r*count), count)
				})
			}
		}
	}
}

func testAllToAll(w *world) {
	for _, dt := range w.copyDTypes() {
		for _, per := range []int{0, 1, 3, 257} {
			for _, inplace := range []bool{false, true} {
				name := fmt.Sprintf("%s/per=%d/inplace=%v", dt, per, inplace)
				w.each(func(ctx context.Context, r int, c collective.Comm) error {
					// Block j of rank r's input is exact.Pattern(r*n+j, ·).
					in := collective.NewTensor(dt, per*w.n)
					for j := range w.n {
						exact.FillPattern(in.Slice(j*per, (j+1)*per), r*w.n+j, 0)
					}
					out := collective.NewTensor(dt, per*w.n)
					if inplace {
						out = in
					}
					if err := c.AllToAll(ctx, out, in); err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					var wrong int64
					for src := range w.n {
						wrong += exact.CountPattern(out.Slice(src*per, (src+1)*per), src*w.n+r, 0)
					}
					return wrongErr(name, wrong, per*w.n)
				})
			}
		}
	}
}

func testBarrier(w *world) {
	// Every rank records its arrival; after the barrier, all must be recorded.
	arrived := make([]atomic.Bool, w.n)
	w.each(func(ctx context.Context, r int, c collective.Comm) error {
		for range 3 {
			if err := c.Barrier(ctx); err != nil {
				return err
			}
		}
		arrived[r].Store(true)
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		for i := range arrived {
			if !arrived[i].Load() {
				return fmt.Errorf("passed the barrier before rank %d arrived", i)
			}
		}
		return nil
	})
}

func testSendRecv(w *world) {
	if w.n < 2 {
		return
	}
	// Every rank exchanges with both ring neighbours at once, issuing the
	// receives and sends in an order that deadlocks if either blocks the other,
	// with several messages of one tag that must arrive in order.
	for _, count := range []int{0, 1, 1009, 1 << 16} {
		w.each(func(ctx context.Context, r int, c collective.Comm) error {
			right, left := (r+1)%w.n, (r-1+w.n)%w.n
			const msgs = 3
			recvs := make([]collective.Tensor, msgs)
			var works []collective.Work
			for k := range msgs {
				recvs[k] = collective.NewTensor(collective.Int32, count)
				works = append(works, c.IRecv(ctx, recvs[k], left, 7))
			}
			for k := range msgs {
				t := collective.NewTensor(collective.Int32, count)
				exact.FillPattern(t, r*msgs+k, 0)
				works = append(works, c.ISend(ctx, t, right, 7))
			}
			for _, wk := range works {
				if err := wk.Wait(ctx); err != nil {
					return err
				}
			}
			for k := range msgs {
				if err := wrongErr(fmt.Sprintf("message %d of %d from rank %d", k, count, left),
					exact.CountPattern(recvs[k], left*msgs+k, 0), count); err != nil {
					return err
				}
			}
			// Blocking forms, even ranks sending first.
			t := collective.NewTensor(collective.Float64, count)
			if r%2 == 0 {
				exact.FillPattern(t, r, 0)
				if err := c.Send(ctx, t, right, 1); err != nil {
					return err
				}
				if err := c.Recv(ctx, t, left, 1); err != nil {
					return err
				}
			} else {
				got := collective.NewTensor(collective.Float64, count)
				if err := c.Recv(ctx, got, left, 1); err != nil {
					return err
				}
				exact.FillPattern(t, r, 0)
				if err := c.Send(ctx, t, right, 1); err != nil {
					return err
				}
				t = got
			}
			return wrongErr("blocking send/recv", exact.CountPattern(t, left, 0), count)
		})
	}
}

func testAsyncOrder(w *world) {
	// Several async collectives in flight at once complete in issue order
	// with the right results; waiting on them out of order is fine.
	w.each(func(ctx context.Context, r int, c collective.Comm) error {
		const k = 6
		ts := make([]collective.Tensor, k)
		works := make([]collective.Work, k)
		for i := range k {
			ts[i] = collective.NewTensor(collective.Float32, 1000+i*333)
			exact.Fill(ts[i], collective.Sum, w.n, r, i)
			works[i] = c.IAllReduce(ctx, ts[i], collective.Sum)
		}
		b := collective.NewTensor(collective.Int64, 10)
		if r == 0 {
			exact.FillPattern(b, 0, 0)
		}
		bw := c.IBroadcast(ctx, b, 0)
		for i := k - 1; i >= 0; i-- {
			if err := works[i].Wait(ctx); err != nil {
				return err
			}
			if err := wrongErr(fmt.Sprintf("async allreduce %d", i), exact.CountWrong(ts[i], collective.Sum, w.n, i), ts[i].Count()); err != nil {
				return err
			}
		}
		if err := bw.Wait(ctx); err != nil {
			return err
		}
		select {
		case <-bw.Done():
		default:
			return errors.New("Done not closed after Wait returned")
		}
		return wrongErr("async broadcast", exact.CountPattern(b, 0, 0), 10)
	})
}

func testGroups(w *world) {
	// Split into evens and odds; each group reduces on its own, concurrently,
	// then a group over all ranks in reverse order checks rank remapping.
	var evens, odds []int
	for r := range w.n {
		if r%2 == 0 {
			evens = append(evens, r)
		} else {
			odds = append(odds, r)
		}
	}
	w.each(func(ctx context.Context, r int, c collective.Comm) error {
		members := evens
		if r%2 == 1 {
			members = odds
		}
		g, err := c.NewGroup(members)
		if err != nil {
			return err
		}
		defer g.Close()
		if g.Size() != len(members) || members[g.Rank()] != r {
			return fmt.Errorf("group %v: rank %d of %d, want rank %d", members, g.Rank(), g.Size(), slices.Index(members, r))
		}
		t := collective.NewTensor(collective.Int32, 501)
		exact.Fill(t, collective.Sum, g.Size(), g.Rank(), 0)
		if err := g.AllReduce(ctx, t, collective.Sum); err != nil {
			return err
		}
		if err := wrongErr("group allreduce", exact.CountWrong(t, collective.Sum, g.Size(), 0), 501); err != nil {
			return err
		}
		rev := make([]int, w.n)
		for i := range rev {
			rev[i] = w.n - 1 - i
		}
		all, err := c.NewGroup(rev)
		if err != nil {
			return err
		}
		defer all.Close()
		if all.Rank() != w.n-1-r {
			return fmt.Errorf("reversed group: rank %d, want %d", all.Rank(), w.n-1-r)
		}
		b := collective.NewTensor(collective.Float32, 77)
		if all.Rank() == 0 {
			exact.FillPattern(b, 42, 0)
		}
		if err := all.Broadcast(ctx, b, 0); err != nil {
			return err
		}
		if err := wrongErr("reversed group broadcast", exact.CountPattern(b, 42, 0), 77); err != nil {
			return err
		}
		// The world still works after its groups.
		return c.Barrier(ctx)
	})
}

func testInvalidArgs(w *world) {
	w.each(func(ctx context.Context, r int, c collective.Comm) error {
		f := collective.NewTensor(collective.Float32, 4)
		checks := []struct {
			name string
			err  error
		}{
			{"root out of range", c.Broadcast(ctx, f, w.n)},
			{"negative root", c.Reduce(ctx, f, -1, collective.Sum)},
			{"invalid op", c.AllReduce(ctx, f, collective.Op(99))},
			{"allgather sizes", c.AllGather(ctx, collective.NewTensor(collective.Float32, 4*w.n+1), f)},
			{"dtype mismatch", c.AllGather(ctx, collective.NewTensor(collective.Int32, 4*w.n), f)},
			{"ragged tensor", c.AllReduce(ctx, collective.Tensor{DType: collective.Float32, Data: make([]byte, 7)}, collective.Sum)},
			{"bad group", func() error { _, err := c.NewGroup([]int{0, 0}); return err }()},
		}
		for _, ch := range checks {
			if ch.err == nil {
				return fmt.Errorf("%s: accepted", ch.name)
			}
			if ch.name != "bad group" && !errors.Is(ch.err, collective.ErrInvalid) {
				return fmt.Errorf("%s: %v does not wrap ErrInvalid", ch.name, ch.err)
			}
		}
		// Rejected calls consume no sequence number: the world still agrees.
		return c.Barrier(ctx)
	})
}
