//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// The runtime's calls distbench makes, resolved from the one CUDA runtime
// this process loads (the nccl strategy resolves its own from the same
// handle). The info calls are optional: a runtime without them still
// allocates and copies.
typedef struct {
	int (*getDeviceCount)(int *);
	int (*setDevice)(int);
	int (*cmalloc)(void **, size_t);
	int (*cfree)(void *);
	int (*mallocHost)(void **, size_t);
	int (*freeHost)(void *);
	int (*cmemcpy)(void *, const void *, size_t, int);
	const char *(*errorString)(int);
	int (*runtimeVersion)(int *);
	int (*driverVersion)(int *);
	int (*attribute)(int *, int, int);
	int (*pciBusId)(char *, int, int);
	int (*memInfo)(size_t *, size_t *);
} cuRuntime;

static cuRuntime rt;

static void *cu_open(const char *path, int global, char *err, int errlen) {
	void *h = dlopen(path, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
	if (!h) snprintf(err, errlen, "%s", dlerror());
	return h;
}

// cu_file is the file the dynamic loader mapped for handle h: the path a
// bare soname resolved to.
static const char *cu_file(void *h) {
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm) return "";
	return lm->l_name;
}

static void *cu_sym(void *h, const char *name) { return dlsym(h, name); }

// cu_bind resolves the runtime's calls from h into rt: 0, or 2 with the
// first missing symbol's name in err (rt is then left as it was).
static int cu_bind(void *h, char *err, int errlen) {
	cuRuntime r = {0};
#define REQ(f, name) if (!(*(void **)&r.f = dlsym(h, name))) { snprintf(err, errlen, "%s", name); return 2; }
#define OPT(f, name) *(void **)&r.f = dlsym(h, name);
	REQ(getDeviceCount, "cudaGetDeviceCount")
	REQ(setDevice, "cudaSetDevice")
	REQ(cmalloc, "cudaMalloc")
	REQ(cfree, "cudaFree")
	REQ(mallocHost, "cudaMallocHost")
	REQ(freeHost, "cudaFreeHost")
	REQ(cmemcpy, "cudaMemcpy")
	REQ(errorString, "cudaGetErrorString")
	OPT(runtimeVersion, "cudaRuntimeGetVersion")
	OPT(driverVersion, "cudaDriverGetVersion")
	OPT(attribute, "cudaDeviceGetAttribute")
	OPT(pciBusId, "cudaDeviceGetPCIBusId")
	OPT(memInfo, "cudaMemGetInfo")
#undef REQ
#undef OPT
	rt = r;
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

// -1 where the runtime lacks the call.
static int cu_versions(int *runtime, int *driver) {
	*runtime = *driver = -1;
	if (rt.runtimeVersion && rt.runtimeVersion(runtime)) *runtime = -1;
	if (rt.driverVersion && rt.driverVersion(driver)) *driver = -1;
	return 0;
}

// cu_device fills what gpu-check shows of device dev; each -1 or "" where
// the runtime lacks the call or it fails. cudaMemGetInfo makes the
// device's context, which is why it runs only here.
static int cu_device(int dev, char *bus, int buslen, int *major, int *minor, int *sms, size_t *freeb, size_t *total) {
	*major = *minor = *sms = -1;
	*freeb = *total = 0;
	bus[0] = 0;
	int e = rt.setDevice(dev);
	if (e) return e;
	if (rt.pciBusId && rt.pciBusId(bus, buslen, dev)) bus[0] = 0;
	if (rt.attribute) {
		if (rt.attribute(major, 75, dev)) *major = -1; // cudaDevAttrComputeCapabilityMajor
		if (rt.attribute(minor, 76, dev)) *minor = -1; // cudaDevAttrComputeCapabilityMinor
		if (rt.attribute(sms, 16, dev)) *sms = -1;     // cudaDevAttrMultiProcessorCount
	}
	if (rt.memInfo) e = rt.memInfo(freeb, total);
	return e;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// CUDA error codes named in messages.
const (
	cudaSuccess                   = 0
	cudaErrorInsufficientDriver   = 35
	cudaErrorNoDevice             = 100
	cudaErrorSystemDriverMismatch = 803
	memcpyHostToDevice            = 1
	memcpyDeviceToHost            = 2
	memcpyDeviceToDevice          = 3
)

// Loaded is a library this process loaded: the file the dynamic loader
// mapped and where the search found it.
type Loaded struct {
	Library string // Library.Name
	Path    string
	From    string
	handle  unsafe.Pointer
}

// Handle is the library's dlopen handle, for a package that resolves
// its own calls from it (the nccl strategy, from the runtime).
func (l Loaded) Handle() unsafe.Pointer { return l.handle }

var (
	loadMu    sync.Mutex
	loadedKey string // Finder.Key of the runtime loaded; "" for none
	rtLoaded  Loaded
	driver    Loaded // libcuda.so.1, where it was found; Path "" where not
)

// Open dlopens the first of lib's candidates that opens and that accept
// (nil: any) takes, and returns it; its error is one line naming what was
// looked for and where. global makes the library's symbols visible to
// libraries loaded after it (the driver's, which the runtime then finds by
// soname, already loaded).
func Open(f Finder, lib Library, global bool, accept func(Loaded) error) (Loaded, error) {
	var tried string // the dynamic loader's first complaint
	var refused error
	for c := range f.Candidates(lib) {
		cp := C.CString(c.Path)
		var errbuf [512]C.char
		h := C.cu_open(cp, boolInt(global), &errbuf[0], C.int(len(errbuf)))
		C.free(unsafe.Pointer(cp))
		if h == nil {
			if tried == "" {
				tried = C.GoString(&errbuf[0])
			}
			continue
		}
		l := Loaded{Library: lib.Name, Path: C.GoString(C.cu_file(h)), From: c.From, handle: h}
		if l.Path == "" {
			l.Path = c.Path
		}
		if accept != nil {
			if err := accept(l); err != nil {
				refused = err
				continue
			}
		}
		return l, nil
	}
	if refused != nil {
		return Loaded{}, refused
	}
	return Loaded{}, &NotFoundError{Library: lib, Override: f.Override(lib), Detail: tried}
}

// Symbol is the address of name in a loaded library, 0 where it has none.
func (l Loaded) Symbol(name string) uintptr {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return uintptr(C.cu_sym(l.handle, cn))
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// load finds and binds the CUDA runtime, unless the environment that
// chose it is unchanged since it last did (only tests change it in a
// running process); a failure is tried again next time.
func load() error { return loadFrom(Finder{}) }

// loadFrom is load with the search f makes (a fake tree's, in tests).
func loadFrom(f Finder) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	key := f.Key(CUDART) + "\x00" + f.Key(Driver) + "\x00" + f.Root + fmt.Sprint(f.NoSystem)
	if loadedKey == key {
		return nil
	}
	loadedKey = ""
	loadDriver(f)
	// A runtime newer than the driver answers cudaErrorInsufficientDriver:
	// an older one further down the list may work (a toolkit's 13 beside a
	// wheel's 12 on a 535 driver). Failing all, the first one's answer is
	// the clearest.
	var first *Loaded
	var bindErr error
	l, err := Open(f, CUDART, false, func(l Loaded) error {
		var errbuf [256]C.char
		if C.cu_bind(l.handle, &errbuf[0], C.int(len(errbuf))) != 0 {
			bindErr = fmt.Errorf("cuda: %s (%s) lacks %s", CUDART.Name, l.Path, C.GoString(&errbuf[0]))
			return bindErr
		}
		if _, rc := rtCount(); rc == cudaErrorInsufficientDriver || rc == cudaErrorSystemDriverMismatch {
			if first == nil {
				first = &l
			}
			return errors.New("too new for the driver")
		}
		return nil
	})
	switch {
	case err == nil:
	case first != nil:
		var errbuf [256]C.char
		C.cu_bind(first.handle, &errbuf[0], C.int(len(errbuf)))
		l = *first
	case bindErr != nil:
		return bindErr
	default:
		hint := "install it, name it in " + EnvCUDARTLib + ", or choose --device cpu"
		if f.Override(CUDART) != "" {
			hint = "install it, or choose --device cpu"
		}
		var nf *NotFoundError
		if errors.As(err, &nf) && nf.Detail != "" {
			return fmt.Errorf("cuda: %w (%s): %s", err, hint, nf.Detail)
		}
		if nf != nil {
			return fmt.Errorf("cuda: %w (%s)", err, hint)
		}
		return fmt.Errorf("cuda: %w", err)
	}
	rtLoaded = l
	loadedKey = key
	return nil
}

// loadDriver loads libcuda.so.1, globally, from the first place it is
// found, so that the runtime finds it by its soname even where the driver
// sits outside the loader's path; not finding it is no error here (the
// runtime then says cudaErrorInsufficientDriver).
func loadDriver(f Finder) {
	driver = Loaded{Library: Driver.Name}
	if l, err := Open(f, Driver, true, nil); err == nil {
		driver = l
	}
}

// Runtime is the CUDA runtime this process uses, loading it if need be.
func Runtime() (Loaded, error) {
	if err := load(); err != nil {
		return Loaded{}, err
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	return rtLoaded, nil
}

// DriverLibrary is the driver's libcuda.so.1 as the runtime's loading
// found it; Path is "" where it was not found.
func DriverLibrary() Loaded {
	loadMu.Lock()
	defer loadMu.Unlock()
	return driver
}

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

// The runtime's calls, for cuda.go and device.go.

func rtCount() (int, int) {
	var n C.int
	rc := C.cu_count(&n)
	return int(n), int(rc)
}

func rtMalloc(dev, n int) (uintptr, int) {
	var p C.uintptr_t
	rc := C.cu_malloc(C.int(dev), &p, C.size_t(n))
	return uintptr(p), int(rc)
}

func rtFree(dev int, p uintptr) { C.cu_free(C.int(dev), C.uintptr_t(p)) }

func rtMallocHost(dev, n int) (unsafe.Pointer, int) {
	var p unsafe.Pointer
	rc := C.cu_malloc_host(C.int(dev), &p, C.size_t(n))
	return p, int(rc)
}

func rtFreeHost(p unsafe.Pointer) { C.cu_free_host(p) }

func rtMemcpy(dev int, dst, src uintptr, n, kind int) int {
	return int(C.cu_memcpy(C.int(dev), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int(kind)))
}

// Versions are cudaRuntimeGetVersion's and cudaDriverGetVersion's codes
// (1000×major + 10×minor), -1 where the runtime cannot say.
func Versions() (runtimeVersion, driverVersion int, err error) {
	if err := load(); err != nil {
		return -1, -1, err
	}
	var r, d C.int
	C.cu_versions(&r, &d)
	return int(r), int(d), nil
}

// DeviceInfo is what the runtime tells of one GPU.
type DeviceInfo struct {
	Ordinal      int
	PCIBusID     string // "0000:3B:00.0", as NVML names it too; "" where unknown
	Major, Minor int    // compute capability; -1 where unknown
	SMs          int
	FreeBytes    uint64
	TotalBytes   uint64
	Err          string // what failed on this device, if anything
}

// Devices describes every GPU the runtime sees (CUDA_VISIBLE_DEVICES's,
// where it is set). It makes a context on each, as any use would.
func Devices() ([]DeviceInfo, error) {
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, n)
	for i := range n {
		var bus [64]C.char
		var major, minor, sms C.int
		var free, total C.size_t
		rc := int(C.cu_device(C.int(i), &bus[0], C.int(len(bus)), &major, &minor, &sms, &free, &total))
		out[i] = DeviceInfo{Ordinal: i, PCIBusID: C.GoString(&bus[0]), Major: int(major), Minor: int(minor), SMs: int(sms),
			FreeBytes: uint64(free), TotalBytes: uint64(total)}
		if rc != cudaSuccess {
			out[i].Err = errString(rc)
		}
	}
	return out, nil
}
