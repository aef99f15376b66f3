//go:build cgo

package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/distbench/distbench/collective"
)

// Available loads the runtime and asks it for a device: nil, or one line
// saying why --device cuda cannot run here.
func Available() error {
	_, err := DeviceCount()
	return err
}

// DeviceCount is cudaGetDeviceCount, as an error where there is no device.
func DeviceCount() (int, error) {
	if err := load(); err != nil {
		return 0, err
	}
	n, rc := rtCount()
	if rc != cudaSuccess {
		return 0, fmt.Errorf("cuda: no usable GPU: cudaGetDeviceCount: %s (choose --device cpu)", errString(rc))
	}
	if n == 0 {
		return 0, fmt.Errorf("cuda: no usable GPU: cudaGetDeviceCount found none (choose --device cpu)")
	}
	return n, nil
}

// Alloc allocates n bytes of memory on device ordinal (cudaMalloc); free
// releases it, once.
func Alloc(ordinal, n int) (collective.DeviceMemory, func(), error) {
	if err := load(); err != nil {
		return nil, nil, err
	}
	p, rc := rtMalloc(ordinal, n)
	if rc != cudaSuccess {
		return nil, nil, fmt.Errorf("cuda: cudaMalloc(%d) on device %d: %s", n, ordinal, errString(rc))
	}
	var once sync.Once
	return &memory{dev: ordinal, addr: p, n: n}, func() {
		once.Do(func() { rtFree(ordinal, p) })
	}, nil
}

// memory is a range of a cudaMalloc allocation.
type memory struct {
	dev  int
	addr uintptr
	n    int
}

var _ collective.DeviceMemory = (*memory)(nil)

func (m *memory) Device() collective.Device { return collective.CUDA }
func (m *memory) Ordinal() int              { return m.dev }
func (m *memory) Addr() uintptr             { return m.addr }
func (m *memory) Bytes() int                { return m.n }

func (m *memory) Slice(lo, hi int) collective.DeviceMemory {
	if lo < 0 || hi < lo || hi > m.n {
		panic(fmt.Sprintf("cuda: slice [%d:%d] of %d bytes", lo, hi, m.n))
	}
	return &memory{dev: m.dev, addr: m.addr + uintptr(lo), n: hi - lo}
}

func (m *memory) copy(dst, src uintptr, n, kind int, what string) error {
	if n == 0 {
		return nil
	}
	if rc := rtMemcpy(m.dev, dst, src, n, kind); rc != cudaSuccess {
		return fmt.Errorf("cuda: cudaMemcpy %s (%d bytes, device %d): %s", what, n, m.dev, errString(rc))
	}
	return nil
}

func (m *memory) sized(n int) error {
	if n != m.n {
		return fmt.Errorf("cuda: copy of %d bytes to or from %d of device memory", n, m.n)
	}
	return nil
}

func (m *memory) ToHost(dst []byte) error {
	if err := m.sized(len(dst)); err != nil || m.n == 0 {
		return err
	}
	return m.copy(uintptr(unsafe.Pointer(&dst[0])), m.addr, m.n, memcpyDeviceToHost, "to the host")
}

func (m *memory) FromHost(src []byte) error {
	if err := m.sized(len(src)); err != nil || m.n == 0 {
		return err
	}
	return m.copy(m.addr, uintptr(unsafe.Pointer(&src[0])), m.n, memcpyHostToDevice, "to the device")
}

func (m *memory) FromDevice(src collective.DeviceMemory) error {
	s, ok := src.(*memory)
	if !ok {
		return fmt.Errorf("cuda: copy from %T memory", src)
	}
	if err := m.sized(s.n); err != nil {
		return err
	}
	if s.dev != m.dev {
		return fmt.Errorf("cuda: copy from device %d to device %d (not supported)", s.dev, m.dev)
	}
	return m.copy(m.addr, s.addr, m.n, memcpyDeviceToDevice, "device to device")
}

// PinnedHost allocates page-locked host memory (cudaMallocHost), which
// cudaMemcpy moves at the bus's full speed; the slice views C memory, which
// the garbage collector neither moves nor frees.
func (m *memory) PinnedHost(n int) ([]byte, func(), error) {
	p, rc := rtMallocHost(m.dev, n)
	if rc != cudaSuccess {
		return nil, nil, fmt.Errorf("cuda: cudaMallocHost(%d): %s", n, errString(rc))
	}
	var once sync.Once
	buf := unsafe.Slice((*byte)(p), n)
	return buf, func() { once.Do(func() { rtFreeHost(p) }) }, nil
}
