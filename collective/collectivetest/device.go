package collectivetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/distbench/distbench/collective"
)

// Alloc allocates n bytes of device memory for rank (of the world) in
// [OnDevice]; free releases it.
type Alloc func(rank, n int) (mem collective.DeviceMemory, free func(), err error)

// OnDevice runs the suite on device tensors: every communicator newWorld
// builds is wrapped so that each tensor the suite passes is copied into
// device memory from alloc before the operation, the operation gets the
// device tensor, and the result is copied back into the suite's host tensor
// when it completes. In-place calls stay in place: a tensor whose host
// memory lies inside another argument's is given the matching range of
// that argument's device memory.
func OnDevice(newWorld NewWorld, alloc Alloc) NewWorld {
	return func(t testing.TB, n int) []collective.Comm {
		comms := newWorld(t, n)
		out := make([]collective.Comm, len(comms))
		for i, c := range comms {
			out[i] = &devComm{Comm: c, alloc: alloc, rank: i}
		}
		return out
	}
}

// devComm mirrors its tensor arguments in device memory.
type devComm struct {
	collective.Comm
	alloc Alloc
	rank  int // in the world, which picks the device
}

// mirror is one call's device copies of its host tensors.
type mirror struct {
	hosts []collective.Tensor
	devs  []collective.Tensor
	owned []bool // devs[i] has its own allocation, to copy back and free
	frees []func()
}

// stage returns ts in device memory, larger first, so that a smaller one
// inside a larger (in-place) becomes a slice of it.
func (c *devComm) stage(ts ...collective.Tensor) ([]collective.Tensor, *mirror, error) {
	m := &mirror{hosts: ts, devs: make([]collective.Tensor, len(ts)), owned: make([]bool, len(ts))}
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(ts[b].Data) - len(ts[a].Data) })
	for k, i := range order {
		h := ts[i]
		if j, off, ok := within(h, ts, order[:k]); ok {
			m.devs[i] = collective.Tensor{DType: h.DType, Mem: m.devs[j].Mem.Slice(off, off+len(h.Data))}
			continue
		}
		mem, free, err := c.alloc(c.rank, len(h.Data))
		if err != nil {
			m.release()
			return nil, nil, err
		}
		m.frees = append(m.frees, free)
		if err := mem.FromHost(h.Data); err != nil {
			m.release()
			return nil, nil, err
		}
		m.devs[i], m.owned[i] = collective.Tensor{DType: h.DType, Mem: mem}, true
	}
	return m.devs, m, nil
}

// within finds an earlier tensor (of those at idx) whose host memory holds
// h's, and h's offset in it.
func within(h collective.Tensor, ts []collective.Tensor, idx []int) (int, int, bool) {
	if len(h.Data) == 0 {
		return 0, 0, false
	}
	p := uintptr(unsafe.Pointer(&h.Data[0]))
	for _, j := range idx {
		o := ts[j].Data
		if len(o) == 0 {
			continue
		}
		q := uintptr(unsafe.Pointer(&o[0]))
		if p >= q && p+uintptr(len(h.Data)) <= q+uintptr(len(o)) {
			return j, int(p - q), true
		}
	}
	return 0, 0, false
}

// finish copies the results back into the host tensors (if err is nil) and
// frees the device memory.
func (m *mirror) finish(err error) error {
	if err == nil {
		for i, d := range m.devs {
			if m.owned[i] {
				err = errors.Join(err, d.Mem.ToHost(m.hosts[i].Data))
			}
		}
	}
	m.release()
	return err
}

func (m *mirror) release() {
	for _, f := range m.frees {
		f()
	}
	m.frees = nil
}

// run stages ts, calls op with the device tensors and copies back.
func (c *devComm) run(op func([]collective.Tensor) error, ts ...collective.Tensor) error {
	d, m, err := c.stage(ts...)
	if err != nil {
		return err
	}
	return m.finish(op(d))
}

// start is run for the asynchronous forms: the copy back happens when the
// operation completes, before Done closes.
func (c *devComm) start(op func([]collective.Tensor) collective.Work, ts ...collective.Tensor) collective.Work {
	d, m, err := c.stage(ts...)
	w := &devWork{done: make(chan struct{})}
	if err != nil {
		w.err = err
		close(w.done)
		return w
	}
	inner := op(d)
	go func() {
		w.err = m.finish(inner.Wait(context.Background()))
		close(w.done)
	}()
	return w
}

type devWork struct {
	done chan struct{}
	err  error
}

func (w *devWork) Done() <-chan struct{} { return w.done }

func (w *devWork) Wait(ctx context.Context) error {
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *devComm) Send(ctx context.Context, t collective.Tensor, dst, tag int) error {
	return c.run(func(d []collective.Tensor) error { return c.Comm.Send(ctx, d[0], dst, tag) }, t)
}

func (c *devComm) Recv(ctx context.Context, t collective.Tensor, src, tag int) error {
	return c.run(func(d []collective.Tensor) error { return c.Comm.Recv(ctx, d[0], src, tag) }, t)
}

func (c *devComm) ISend(ctx context.Context, t collective.Tensor, dst, tag int) collective.Work {
	return c.start(func(d []collective.Tensor) collective.Work { return c.Comm.ISend(ctx, d[0], dst, tag) }, t)
}

func (c *devComm) IRecv(ctx context.Context, t collective.Tensor, src, tag int) collective.Work {
	return c.start(func(d []collective.Tensor) collective.Work { return c.Comm.IRecv(ctx, d[0], src, tag) }, t)
}

func (c *devComm) AllReduce(ctx context.Context, t collective.Tensor, op collective.Op) error {
	return c.run(func(d []collective.Tensor) error { return c.Comm.AllReduce(ctx, d[0], op) }, t)
}

func (c *devComm) IAllReduce(ctx context.Context, t collective.Tensor, op collective.Op) collective.Work {
	return c.start(func(d []collective.Tensor) collective.Work { return c.Comm.IAllReduce(ctx, d[0], op) }, t)
}

func (c *devComm) Reduce(ctx context.Context, t collective.Tensor, root int, op collective.Op) error {
	return c.run(func(d []collective.Tensor) error { return c.Comm.Reduce(ctx, d[0], root, op) }, t)
}

func (c *devComm) IReduce(ctx context.Context, t collective.Tensor, root int, op collective.Op) collective.Work {
	return c.start(func(d []collective.Tensor) collective.Work { return c.Comm.IReduce(ctx, d[0], root, op) }, t)
}

func (c *devComm) Broadcast(ctx context.Context, t collective.Tensor, root int) error {
	return c.run(func(d []collective.Tensor) error { return c.Comm.Broadcast(ctx, d[0], root) }, t)
}

func (c *devComm) IBroadcast(ctx context.Context, t collective.Tensor, root int) collective.Work {
	return c.start(func(d []collective.Tensor) collective.Work { return c.Comm.IBroadcast(ctx, d[0], root) }, t)
}

// pair is the out/in operations' shape.
type pair func(ctx context.Context, out, in collective.Tensor) error

func (c *devComm) pair(ctx context.Context, f pair, out, in collective.Tensor) error {
	return c.run(func(d []collective.Tensor) error { return f(ctx, d[0], d[1]) }, out, in)
}

type ipair func(ctx context.Context, out, in collective.Tensor) collective.Work

func (c *devComm) ipair(ctx context.Context, f ipair, out, in collective.Tensor) collective.Work {
	return c.start(func(d []collective.Tensor) collective.Work { return f(ctx, d[0], d[1]) }, out, in)
}

func (c *devComm) AllGather(ctx context.Context, out, in collective.Tensor) error {
	return c.pair(ctx, c.Comm.AllGather, out, in)
}

func (c *devComm) IAllGather(ctx context.Context, out, in collective.Tensor) collective.Work {
	return c.ipair(ctx, c.Comm.IAllGather, out, in)
}

func (c *devComm) ReduceScatter(ctx context.Context, out, in collective.Tensor, op collective.Op) error {
	return c.pair(ctx, func(ctx context.Context, o, i collective.Tensor) error { return c.Comm.ReduceScatter(ctx, o, i, op) }, out, in)
}

func (c *devComm) IReduceScatter(ctx context.Context, out, in collective.Tensor, op collective.Op) collective.Work {
	return c.ipair(ctx, func(ctx context.Context, o, i collective.Tensor) collective.Work {
		return c.Comm.IReduceScatter(ctx, o, i, op)
	}, out, in)
}

func (c *devComm) Gather(ctx context.Context, out, in collective.Tensor, root int) error {
	return c.pair(ctx, func(ctx context.Context, o, i collective.Tensor) error { return c.Comm.Gather(ctx, o, i, root) }, out, in)
}

func (c *devComm) IGather(ctx context.Context, out, in collective.Tensor, root int) collective.Work {
	return c.ipair(ctx, func(ctx context.Context, o, i collective.Tensor) collective.Work {
		return c.Comm.IGather(ctx, o, i, root)
	}, out, in)
}

func (c *devComm) Scatter(ctx context.Context, out, in collective.Tensor, root int) error {
	return c.pair(ctx, func(ctx context.Context, o, i collective.Tensor) error { return c.Comm.Scatter(ctx, o, i, root) }, out, in)
}

func (c *devComm) IScatter(ctx context.Context, out, in collective.Tensor, root int) collective.Work {
	return c.ipair(ctx, func(ctx context.Context, o, i collective.Tensor) collective.Work {
		return c.Comm.IScatter(ctx, o, i, root)
	}, out, in)
}

func (c *devComm) AllToAll(ctx context.Context, out, in collective.Tensor) error {
	return c.pair(ctx, c.Comm.AllToAll, out, in)
}

func (c *devComm) IAllToAll(ctx context.Context, out, in collective.Tensor) collective.Work {
	return c.ipair(ctx, c.Comm.IAllToAll, out, in)
}

func (c *devComm) NewGroup(ranks []int) (collective.Comm, error) {
	g, err := c.Comm.NewGroup(ranks)
	if err != nil {
		return nil, err
	}
	return &devComm{Comm: g, alloc: c.alloc, rank: c.rank}, nil
}

// FakeDevice is device memory for tests of staging where no CUDA runtime
// exists: host memory that the code under test can reach only through
// collective.DeviceMemory (its Addr is not a usable pointer), so a
// strategy that read a device tensor's Data would see none. It counts its
// copies and pinned allocations.
type FakeDevice struct {
	mu                   sync.Mutex
	Copies, PinnedAllocs int
	PinnedLive           int // pinned buffers not yet freed
}

// Alloc is an [Alloc] of fake device memory.
func (f *FakeDevice) Alloc(_, n int) (collective.DeviceMemory, func(), error) {
	return &fakeMem{f: f, b: collective.NewTensor(collective.Uint8, n).Data}, func() {}, nil
}

type fakeMem struct {
	f *FakeDevice
	b []byte
}

func (m *fakeMem) Device() collective.Device { return collective.Device(-1) }
func (m *fakeMem) Ordinal() int              { return 0 }
func (m *fakeMem) Addr() uintptr             { return 0x1000 } // nothing the code under test may dereference
func (m *fakeMem) Bytes() int                { return len(m.b) }

func (m *fakeMem) Slice(lo, hi int) collective.DeviceMemory {
	return &fakeMem{f: m.f, b: m.b[lo:hi:hi]}
}

func (m *fakeMem) count() {
	m.f.mu.Lock()
	m.f.Copies++
	m.f.mu.Unlock()
}

func (m *fakeMem) check(n int) error {
	if n != len(m.b) {
		return fmt.Errorf("fake device: copy of %d bytes to or from %d", n, len(m.b))
	}
	m.count()
	return nil
}

func (m *fakeMem) ToHost(dst []byte) error {
	if err := m.check(len(dst)); err != nil {
		return err
	}
	copy(dst, m.b)
	return nil
}

func (m *fakeMem) FromHost(src []byte) error {
	if err := m.check(len(src)); err != nil {
		return err
	}
	copy(m.b, src)
	return nil
}

func (m *fakeMem) FromDevice(src collective.DeviceMemory) error {
	s, ok := src.(*fakeMem)
	if !ok {
		return fmt.Errorf("fake device: copy from %T", src)
	}
	if err := m.check(len(s.b)); err != nil {
		return err
	}
	copy(m.b, s.b)
	return nil
}

func (m *fakeMem) PinnedHost(n int) ([]byte, func(), error) {
	m.f.mu.Lock()
	m.f.PinnedAllocs++
	m.f.PinnedLive++
	m.f.mu.Unlock()
	var once sync.Once
	return collective.NewTensor(collective.Uint8, n).Data, func() {
		once.Do(func() {
			m.f.mu.Lock()
			m.f.PinnedLive--
			m.f.mu.Unlock()
		})
	}, nil
}
