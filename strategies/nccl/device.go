//go:build cgo

package nccl

import (
	"fmt"

	"github.com/distbench/distbench/collective"
)

// Device tensors (collective.Tensor.Mem, from internal/cuda) go to NCCL as
// they are: the engine hands them over unstaged because the algorithms are
// DeviceNative, and leaves Avg to ncclAvg. Host tensors are still staged
// through the communicator's own device buffers, so a call may mix the two
// (a gather's ignored out on a non-root rank, say).

// DeviceNative says the engine may pass device memory to these algorithms.
func (a *algorithms) DeviceNative() bool { return true }

// usable is staged's check that the communicator can still take work.
func (c *ncomm) usable() error {
	if c.closed {
		return collective.ErrClosed
	}
	if c.dead != nil {
		return fmt.Errorf("rank %d: %w: %v", c.global, errAborted, c.dead)
	}
	return nil
}

// mine checks that a device tensor is CUDA memory on this rank's device.
func (c *ncomm) mine(t collective.Tensor) error {
	if err := c.usable(); err != nil {
		return err
	}
	if t.Mem.Device() != collective.CUDA {
		return fmt.Errorf("rank %d: %s is not CUDA memory", c.global, t)
	}
	if t.Mem.Ordinal() != c.dev {
		return fmt.Errorf("rank %d: %s is on device %d, but this rank's communicator is on device %d", c.global, t, t.Mem.Ordinal(), c.dev)
	}
	return nil
}

// src is the device address NCCL reads t from: its own memory, or staging
// buffer i with t uploaded into it.
func (c *ncomm) src(i int, t collective.Tensor) (uintptr, error) {
	if t.Mem == nil {
		return c.upload(i, t.Data)
	}
	return t.Mem.Addr(), c.mine(t)
}

// dst is the device address NCCL writes t's result to: its own memory, or
// staging buffer i, which result then downloads.
func (c *ncomm) dst(i int, t collective.Tensor) (uintptr, error) {
	if t.Mem == nil {
		return c.staged(i, len(t.Data))
	}
	return t.Mem.Addr(), c.mine(t)
}

// result copies a host tensor's result down from d; a device tensor has it.
func (c *ncomm) result(t collective.Tensor, d uintptr) error {
	if t.Mem != nil {
		return nil
	}
	return c.download(t.Data, d)
}

// srcApart is src, but a device in that shares memory with out (in place)
// is first copied into staging buffer i: grouped sends and receives, and
// a stand-in's collectives, would otherwise read what they write.
func (c *ncomm) srcApart(i int, in, out collective.Tensor) (uintptr, error) {
	p, err := c.src(i, in)
	if err != nil || in.Mem == nil || out.Mem == nil || in.Bytes() == 0 || out.Bytes() == 0 {
		return p, err
	}
	q := out.Mem.Addr()
	if p >= q+uintptr(out.Bytes()) || q >= p+uintptr(in.Bytes()) {
		return p, nil
	}
	s, err := c.staged(i, in.Bytes())
	if err != nil {
		return 0, err
	}
	if rc := devCopy(c.dev, s, p, in.Bytes()); rc != cudaSuccess {
		return 0, fmt.Errorf("rank %d: cudaMemcpy on the device: %s", c.global, cudaErr(rc))
	}
	return s, nil
}

// copyOwn copies this rank's own block (n bytes from device address from,
// which holds in's data) into out at byte offset off, wherever out is.
func (c *ncomm) copyOwn(out collective.Tensor, off int, from uintptr, n int) error {
	if out.Mem == nil {
		return c.download(out.Data[off:off+n], from)
	}
	to := out.Mem.Addr() + uintptr(off)
	if to == from || n == 0 {
		return nil
	}
	if rc := devCopy(c.dev, to, from, n); rc != cudaSuccess {
		return fmt.Errorf("rank %d: cudaMemcpy on the device: %s", c.global, cudaErr(rc))
	}
	return nil
}

// ownFrom copies in, this rank's own block, into out at byte offset off,
// each wherever it is (in may be that very block of out: in place).
func (c *ncomm) ownFrom(out collective.Tensor, off int, in collective.Tensor) error {
	n := in.Bytes()
	switch {
	case in.Mem != nil:
		if err := c.mine(in); err != nil {
			return err
		}
		return c.copyOwn(out, off, in.Mem.Addr(), n)
	case out.Mem == nil:
		copy(out.Data[off:off+n], in.Data)
		return nil
	}
	if err := out.Mem.Slice(off, off+n).FromHost(in.Data); err != nil {
		return fmt.Errorf("rank %d: %w", c.global, err)
	}
	return nil
}
