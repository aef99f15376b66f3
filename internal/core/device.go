package core

import (
	"fmt"
	"slices"
	"sync"

	"github.com/distbench/distbench/collective"
)

// Device tensors (collective.Tensor.Mem) reach the algorithms in one of two
// ways. Algorithms that are collective.DeviceNative (NCCL) get them as they
// are, with Avg left to them and a group of one copying device to device.
// The others (ring, tree, ps) never see device memory: around each
// operation, on the executor, its device tensors are copied into pinned
// host memory (cudaMallocHost, as gloo stages CUDA tensors) and its
// results back, so that those strategies need no change at all.

// native reports whether the group's algorithms take device memory.
func (g *Group) native() bool {
	n, ok := g.algos.(collective.DeviceNative)
	return ok && n.DeviceNative()
}

// arg is one tensor argument of an operation, by reference: the
// operation's closure reads the variable, so staging can substitute a host
// tensor for the device one while it runs. read says the operation reads
// it, wrote that it writes it.
type arg struct {
	t           *collective.Tensor
	read, wrote bool
}

func readsWrites(t *collective.Tensor) arg { return arg{t: t, read: true, wrote: true} }
func reads(t *collective.Tensor) arg       { return arg{t: t, read: true} }
func writes(t *collective.Tensor) arg      { return arg{t: t, wrote: true} }

// staged returns p so that its device tensors, if any, are staged through
// pinned host memory, unless the algorithms take device memory themselves.
func (g *Group) staged(p pending, args ...arg) pending {
	if p.err != nil || !slices.ContainsFunc(args, func(a arg) bool { return a.t.Mem != nil }) || (g.native() && !p.onHost) {
		return p
	}
	body := p.fn
	p.fn = func(c *Call) error {
		devs := make([]collective.Tensor, len(args))
		var held []pinned
		defer func() {
			for i, a := range args {
				*a.t = devs[i]
			}
			for _, h := range held {
				g.shared.pinned.put(h)
			}
		}()
		for i, a := range args {
			devs[i] = *a.t
			if devs[i].Mem == nil {
				continue
			}
			h, err := g.shared.pinned.get(devs[i].Mem, devs[i].Bytes())
			if err != nil {
				return fmt.Errorf("staging %s through pinned host memory: %w", devs[i], err)
			}
			held = append(held, h)
			host := collective.Tensor{DType: devs[i].DType, Data: h.buf[:devs[i].Bytes()]}
			if a.read {
				if err := devs[i].Mem.ToHost(host.Data); err != nil {
					return fmt.Errorf("copying %s to the host: %w", devs[i], err)
				}
			}
			*a.t = host
		}
		if err := body(c); err != nil {
			return err
		}
		for i, a := range args {
			if a.wrote && devs[i].Mem != nil {
				if err := devs[i].Mem.FromHost(a.t.Data); err != nil {
					return fmt.Errorf("copying %s back to the device: %w", devs[i], err)
				}
			}
		}
		return nil
	}
	return p
}

// nativeAvg reports whether Avg goes to the algorithms as it is: device
// tensors in native algorithms, which the engine cannot divide on the host.
func (g *Group) nativeAvg(t collective.Tensor) bool { return t.Mem != nil && g.native() }

// copyTensor is a group of one's copy of in into out, on either side of
// the bus (the staged case has host tensors by then).
func copyTensor(out, in collective.Tensor) error {
	if out.Mem == nil && in.Mem == nil {
		copy(out.Data, in.Data)
		return nil
	}
	return out.CopyFrom(in)
}

// pinned is one page-locked host buffer and what frees it.
type pinned struct {
	buf  []byte
	free func()
}

// pinnedPool keeps the job's staging buffers between operations, since
// cudaMallocHost is slow (milliseconds on a GPU), and frees them when the
// world closes; a buffer in use then is freed when its operation returns.
type pinnedPool struct {
	mu     sync.Mutex
	idle   []pinned
	closed bool
}

// maxIdle bounds the buffers kept: an operation stages at most two tensors.
const maxIdle = 4

func (p *pinnedPool) get(mem collective.DeviceMemory, n int) (pinned, error) {
	p.mu.Lock()
	best := -1
	for i, b := range p.idle {
		if cap(b.buf) >= n && (best < 0 || cap(b.buf) < cap(p.idle[best].buf)) {
			best = i
		}
	}
	if best >= 0 {
		b := p.idle[best]
		p.idle = slices.Delete(p.idle, best, best+1)
		p.mu.Unlock()
		return b, nil
	}
	p.mu.Unlock()
	buf, free, err := mem.PinnedHost(max(n, 1))
	if err != nil {
		return pinned{}, err
	}
	return pinned{buf: buf[:n:len(buf)], free: free}, nil
}

func (p *pinnedPool) put(b pinned) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		b.free()
		return
	}
	p.idle = append(p.idle, b)
	if len(p.idle) > maxIdle {
		// Free the smallest: the larger serve every size it did.
		i := 0
		for j, x := range p.idle {
			if cap(x.buf) < cap(p.idle[i].buf) {
				i = j
			}
		}
		p.idle[i].free()
		p.idle = slices.Delete(p.idle, i, i+1)
	}
}

func (p *pinnedPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, b := range p.idle {
		b.free()
	}
	p.idle = nil
}

// p2pStaged runs a send or receive of a device tensor through host memory
// (ordinary, not pinned: point-to-point messages are not on the path the
// sweeps compare). Device-native strategies send over the transport too.
func p2pStaged(op string, t collective.Tensor, data []byte, do func(data []byte) error) error {
	if t.Mem == nil {
		return do(data)
	}
	host := make([]byte, t.Bytes())
	if op == "send" {
		if err := t.Mem.ToHost(host); err != nil {
			return fmt.Errorf("copying %s to the host: %w", t, err)
		}
	}
	if err := do(host); err != nil {
		return err
	}
	if op == "recv" {
		if err := t.Mem.FromHost(host); err != nil {
			return fmt.Errorf("copying %s to the device: %w", t, err)
		}
	}
	return nil
}
