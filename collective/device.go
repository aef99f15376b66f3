package collective

import (
	"fmt"
	"strings"
)

// Device is where a tensor's memory lives.
type Device int

const (
	// CPU is host memory, the Data of a Tensor.
	CPU Device = iota
	// CUDA is an NVIDIA GPU's memory (cudaMalloc), a Tensor's Mem.
	CUDA
)

var deviceNames = [...]string{CPU: "cpu", CUDA: "cuda"}

func (d Device) String() string {
	if d >= 0 && int(d) < len(deviceNames) {
		return deviceNames[d]
	}
	return fmt.Sprintf("Device(%d)", int(d))
}

// ParseDevice reads a device name as --device takes it.
func ParseDevice(s string) (Device, error) {
	for d, name := range deviceNames {
		if s == name {
			return Device(d), nil
		}
	}
	return CPU, fmt.Errorf("unknown device %q (accepted: %s)", s, strings.Join(deviceNames[:], ", "))
}

// DeviceMemory is memory a Tensor views off the host: a range of a device
// allocation that the process cannot dereference. Packages that allocate it
// (internal/cuda; collectivetest's fake device) implement it; strategies
// that cannot use it directly have it staged through host memory for them
// (see [DeviceNative]).
type DeviceMemory interface {
	// Device is the kind of device, and Ordinal which of them (cudaSetDevice's number).
	Device() Device
	Ordinal() int
	// Addr is the device address of the first byte; Bytes is the length.
	Addr() uintptr
	Bytes() int
	// Slice returns bytes [lo, hi) of this memory.
	Slice(lo, hi int) DeviceMemory
	// ToHost copies all Bytes() bytes into dst; FromHost copies src
	// (Bytes() bytes) in; FromDevice copies another range of the same
	// device, of the same length, in.
	ToHost(dst []byte) error
	FromHost(src []byte) error
	FromDevice(src DeviceMemory) error
	// PinnedHost allocates n bytes of page-locked host memory
	// (cudaMallocHost) for staging, as gloo stages CUDA tensors; free
	// releases it.
	PinnedHost(n int) (buf []byte, free func(), err error)
}

// DeviceNative is implemented by communicators whose strategy operates on
// device memory itself (NCCL); others are handed host copies of device
// tensors, staged through pinned host memory around each operation.
type DeviceNative interface {
	DeviceNative() bool
}

// OnDevice reports whether t lives in device memory (Mem is set).
func (t Tensor) OnDevice() bool { return t.Mem != nil }

// Device is where t lives: CPU, or Mem's device.
func (t Tensor) Device() Device {
	if t.Mem == nil {
		return CPU
	}
	return t.Mem.Device()
}

// DeviceTensor views mem as a tensor of dt; Data stays nil.
func DeviceTensor(dt DType, mem DeviceMemory) Tensor { return Tensor{DType: dt, Mem: mem} }

// ToHost returns t's contents in fresh host memory: t itself (not a
// copy) when it is on the host already.
func (t Tensor) ToHost() (Tensor, error) {
	if t.Mem == nil {
		return t, nil
	}
	h := Tensor{DType: t.DType, Data: make([]byte, t.Mem.Bytes())}
	return h, t.Mem.ToHost(h.Data)
}

// CopyFrom copies src's bytes into t, whichever side of the bus each is
// on; their sizes must be equal.
func (t Tensor) CopyFrom(src Tensor) error {
	if t.Bytes() != src.Bytes() {
		return fmt.Errorf("collective: copy of %d bytes into %d", src.Bytes(), t.Bytes())
	}
	switch {
	case t.Mem == nil && src.Mem == nil:
		copy(t.Data, src.Data)
		return nil
	case t.Mem == nil:
		return src.Mem.ToHost(t.Data)
	case src.Mem == nil:
		return t.Mem.FromHost(src.Data)
	}
	return t.Mem.FromDevice(src.Mem)
}
