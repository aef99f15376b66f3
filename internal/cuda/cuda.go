//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static struct {
	int (*getDeviceCount)(int *);
	int (*setDevice)(int);
	int (*cmalloc)(void **, size_t);
	int (*cfree)(void *);
	int (*mallocHost)(void **, size_t);
	int (*freeHost)(void *);
	int (*cmemcpy)(void *, const void *, size_t, int);
	const char *(*errorString)(int);
} rt;

// cu_load opens the first runtime of paths that loads and resolves every
// symbol: 0, or 1 when none opens, 2 when a symbol is missing (its name in
// err).
static int cu_load(const char **paths, int n, char *err, int errlen) {
	void *h = NULL;
	err[0] = 0;
	for (int i = 0; i < n && !h; i++) h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) { snprintf(err, errlen, "%s", dlerror()); return 1; }
#define SYM(f, name) if (!(*(void **)&rt.f = dlsym(h, name))) { snprintf(err, errlen, "%s", name); return 2; }
	SYM(getDeviceCount, "cudaGetDeviceCount")
	SYM(setDevice, "cudaSetDevice")
	SYM(cmalloc, "cudaMalloc")
	SYM(cfree, "cudaFree")
	SYM(mallocHost, "cudaMallocHost")
	SYM(freeHost, "cudaFreeHost")
	SYM(cmemcpy, "cudaMemcpy")
	SYM(errorString, "cudaGetErrorString")
#undef SYM
	return 0;
}

static int cu_count(int *n) { *n = 0; return rt.getDeviceCount(n); }
static const char *cu_error(int e) { return rt.errorString(e); }
static int cu_malloc(int dev, uintptr_t *p, size_t n) {
	int e = rt.setDevice(dev);
	if (e) return e;
	void *q = NULL;
	e = rt.cmalloc(&q, n ? n : 1);
	*p = (uintptr_t)q;
	return e;
}
static int cu_free(int dev, uintptr_t p) { rt.setDevice(dev); return rt.cfree((void *)p); }
static int cu_malloc_host(int dev, void **p, size_t n) {
	int e = rt.setDevice(dev);
	return e ? e : rt.mallocHost(p, n ? n : 1);
}
static int cu_free_host(void *p) { return rt.freeHost(p); }
// kind: cudaMemcpyHostToDevice 1, DeviceToHost 2, DeviceToDevice 3.
static int cu_memcpy(int dev, uintptr_t dst, uintptr_t src, size_t n, int kind) {
	int e = rt.setDevice(dev);
	return e ? e : rt.cmemcpy((void *)dst, (const void *)src, n, kind);
}
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/distbench/distbench/collective"
)

var (
	loadMu sync.Mutex
	loaded string // the paths loaded, joined
)

func paths() []string {
	if p := os.Getenv(EnvCUDARTLib); p != "" {
		return []string{p}
	}
	return []string{"libcudart.so", "libcudart.so.12", "libcudart.so.11.0"}
}

// load opens the CUDA runtime the environment names, unless it is loaded
// already; a failure is tried again next time (only tests change the
// environment in a running process).
func load() error {
	loadMu.Lock()
	defer loadMu.Unlock()
	ps := paths()
	want := strings.Join(ps, "\x00")
	if loaded == want {
		return nil
	}
	loaded = ""
	cs := make([]*C.char, len(ps))
	for i, p := range ps {
		cs[i] = C.CString(p)
		defer C.free(unsafe.Pointer(cs[i]))
	}
	var errbuf [512]C.char
	switch C.cu_load(&cs[0], C.int(len(cs)), &errbuf[0], C.int(len(errbuf))) {
	case 0:
		loaded = want
		return nil
	case 1:
		return fmt.Errorf("cuda: the CUDA runtime (%s) not found (install it, or choose --device cpu): %s", strings.Join(ps, ", "), C.GoString(&errbuf[0]))
	}
	return fmt.Errorf("cuda: the CUDA runtime (%s) lacks %s", strings.Join(ps, ", "), C.GoString(&errbuf[0]))
}

// CUDA error codes named in messages.
const (
	cudaSuccess                 = 0
	cudaErrorInsufficientDriver = 35
	cudaErrorNoDevice           = 100
	memcpyHostToDevice          = 1
	memcpyDeviceToHost          = 2
	memcpyDeviceToDevice        = 3
)

func errString(code int) string {
	msg := C.GoString(C.cu_error(C.int(code)))
	switch code {
	case cudaErrorNoDevice:
		return fmt.Sprintf("cudaErrorNoDevice (%d): %s", code, msg)
	case cudaErrorInsufficientDriver:
		return fmt.Sprintf("cudaErrorInsufficientDriver (%d): %s", code, msg)
	}
	return fmt.Sprintf("CUDA error %d: %s", code, msg)
}

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
	var n C.int
	if rc := int(C.cu_count(&n)); rc != cudaSuccess {
		return 0, fmt.Errorf("cuda: no usable GPU: cudaGetDeviceCount: %s (choose --device cpu)", errString(rc))
	}
	if n == 0 {
		return 0, fmt.Errorf("cuda: no usable GPU: cudaGetDeviceCount found none (choose --device cpu)")
	}
	return int(n), nil
}

// Alloc allocates n bytes of memory on device ordinal (cudaMalloc); free
// releases it, once.
func Alloc(ordinal, n int) (collective.DeviceMemory, func(), error) {
	if err := load(); err != nil {
		return nil, nil, err
	}
	var p C.uintptr_t
	if rc := int(C.cu_malloc(C.int(ordinal), &p, C.size_t(n))); rc != cudaSuccess {
		return nil, nil, fmt.Errorf("cuda: cudaMalloc(%d) on device %d: %s", n, ordinal, errString(rc))
	}
	var once sync.Once
	return &memory{dev: ordinal, addr: uintptr(p), n: n}, func() {
		once.Do(func() { C.cu_free(C.int(ordinal), p) })
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
	if rc := int(C.cu_memcpy(C.int(m.dev), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int(kind))); rc != cudaSuccess {
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
	var p unsafe.Pointer
	if rc := int(C.cu_malloc_host(C.int(m.dev), &p, C.size_t(n))); rc != cudaSuccess {
		return nil, nil, fmt.Errorf("cuda: cudaMallocHost(%d): %s", n, errString(rc))
	}
	var once sync.Once
	buf := unsafe.Slice((*byte)(p), n)
	return buf, func() { once.Do(func() { C.cu_free_host(p) }) }, nil
}
