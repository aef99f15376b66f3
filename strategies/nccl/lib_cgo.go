//go:build cgo

package nccl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

// Declared locally from NVIDIA/nccl src/nccl.h.in (read at commit
// 021e8045, NCCL 2.29): ncclUniqueId is 128 bytes, passed by value;
// ncclConfig_t is versioned by its size and version fields, and these are
// its fields up to splitShare, the layout of NCCL 2.18, which later
// versions read by the version we declare.
typedef struct { char internal[128]; } dbnUniqueId;
typedef struct {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
	int cgaClusterSize;
	int minCTAs;
	int maxCTAs;
	const char *netName;
	int splitShare;
} dbnConfig;

#define DBN_UNDEF_INT (-2147483647 - 1)

static struct {
	int (*getDeviceCount)(int *);
	int (*setDevice)(int);
	int (*cmalloc)(void **, size_t);
	int (*cfree)(void *);
	int (*cmemcpy)(void *, const void *, size_t, int);
	int (*streamCreate)(void **);
	int (*streamDestroy)(void *);
	int (*streamQuery)(void *);
	const char *(*cudaErrorString)(int);
	int (*getVersion)(int *);
	int (*getUniqueId)(dbnUniqueId *);
	int (*initRankConfig)(void **, int, dbnUniqueId, int, dbnConfig *);
	int (*asyncError)(void *, int *);
	int (*commAbort)(void *);
	int (*commDestroy)(void *);
	const char *(*errorString)(int);
	const char *(*lastError)(void *);
	int (*allReduce)(const void *, void *, size_t, int, int, void *, void *);
	int (*reduce)(const void *, void *, size_t, int, int, int, void *, void *);
	int (*broadcast)(const void *, void *, size_t, int, int, void *, void *);
	int (*allGather)(const void *, void *, size_t, int, void *, void *);
	int (*reduceScatter)(const void *, void *, size_t, int, int, void *, void *);
	int (*send)(const void *, size_t, int, int, void *, void *);
	int (*recv)(void *, size_t, int, int, void *, void *);
	int (*groupStart)(void);
	int (*groupEnd)(void);
} dbn;

static void *sym(void *h, const char *name, char *err, int errlen) {
	void *p = dlsym(h, name);
	if (!p && err[0] == 0) snprintf(err, errlen, "%s", name);
	return p;
}

// dbn_bind resolves every call from the NCCL and the CUDA runtime that
// internal/cuda loaded (handles n and c): 0 on success, 3 when a symbol is
// missing (its name in err).
static int dbn_bind(void *n, void *c, char *err, int errlen) {
	err[0] = 0;
	*(void **)&dbn.getDeviceCount = sym(c, "cudaGetDeviceCount", err, errlen);
	*(void **)&dbn.setDevice = sym(c, "cudaSetDevice", err, errlen);
	*(void **)&dbn.cmalloc = sym(c, "cudaMalloc", err, errlen);
	*(void **)&dbn.cfree = sym(c, "cudaFree", err, errlen);
	*(void **)&dbn.cmemcpy = sym(c, "cudaMemcpy", err, errlen);
	*(void **)&dbn.streamCreate = sym(c, "cudaStreamCreate", err, errlen);
	*(void **)&dbn.streamDestroy = sym(c, "cudaStreamDestroy", err, errlen);
	*(void **)&dbn.streamQuery = sym(c, "cudaStreamQuery", err, errlen);
	*(void **)&dbn.cudaErrorString = sym(c, "cudaGetErrorString", err, errlen);
	*(void **)&dbn.getVersion = sym(n, "ncclGetVersion", err, errlen);
	*(void **)&dbn.getUniqueId = sym(n, "ncclGetUniqueId", err, errlen);
	*(void **)&dbn.initRankConfig = sym(n, "ncclCommInitRankConfig", err, errlen);
	*(void **)&dbn.asyncError = sym(n, "ncclCommGetAsyncError", err, errlen);
	*(void **)&dbn.commAbort = sym(n, "ncclCommAbort", err, errlen);
	*(void **)&dbn.commDestroy = sym(n, "ncclCommDestroy", err, errlen);
	*(void **)&dbn.errorString = sym(n, "ncclGetErrorString", err, errlen);
	*(void **)&dbn.allReduce = sym(n, "ncclAllReduce", err, errlen);
	*(void **)&dbn.reduce = sym(n, "ncclReduce", err, errlen);
	*(void **)&dbn.broadcast = sym(n, "ncclBroadcast", err, errlen);
	*(void **)&dbn.allGather = sym(n, "ncclAllGather", err, errlen);
	*(void **)&dbn.reduceScatter = sym(n, "ncclReduceScatter", err, errlen);
	*(void **)&dbn.send = sym(n, "ncclSend", err, errlen);
	*(void **)&dbn.recv = sym(n, "ncclRecv", err, errlen);
	*(void **)&dbn.groupStart = sym(n, "ncclGroupStart", err, errlen);
	*(void **)&dbn.groupEnd = sym(n, "ncclGroupEnd", err, errlen);
	if (err[0]) return 3;
	*(void **)&dbn.lastError = dlsym(n, "ncclGetLastError"); // NCCL 2.13 on; optional
	return 0;
}

static int dbn_device_count(int *n) { *n = 0; return dbn.getDeviceCount(n); }
static const char *dbn_cuda_error(int e) { return dbn.cudaErrorString(e); }
static const char *dbn_nccl_error(int e) { return dbn.errorString(e); }
static const char *dbn_last_error(uintptr_t comm) { return dbn.lastError ? dbn.lastError((void *)comm) : ""; }
static int dbn_version(int *v) { return dbn.getVersion(v); }
static int dbn_unique_id(void *id) { return dbn.getUniqueId((dbnUniqueId *)id); }

// Every call that touches a device sets it first: the CUDA runtime's
// current device belongs to the calling thread, and Go moves goroutines
// between threads.
static int dbn_malloc(int dev, uintptr_t *p, size_t n) {
	int e = dbn.setDevice(dev);
	if (e) return e;
	void *q = NULL;
	e = dbn.cmalloc(&q, n ? n : 1);
	*p = (uintptr_t)q;
	return e;
}
static int dbn_free(int dev, uintptr_t p) { dbn.setDevice(dev); return dbn.cfree((void *)p); }
static int dbn_memcpy(int dev, uintptr_t dst, uintptr_t src, size_t n, int kind) {
	int e = dbn.setDevice(dev);
	return e ? e : dbn.cmemcpy((void *)dst, (const void *)src, n, kind);
}
static int dbn_to_device(int dev, uintptr_t dst, const void *src, size_t n) {
	int e = dbn.setDevice(dev);
	return e ? e : dbn.cmemcpy((void *)dst, src, n, 1);
}
static int dbn_to_host(int dev, void *dst, uintptr_t src, size_t n) {
	int e = dbn.setDevice(dev);
	return e ? e : dbn.cmemcpy(dst, (const void *)src, n, 2);
}
static int dbn_stream_create(int dev, uintptr_t *s) {
	int e = dbn.setDevice(dev);
	if (e) return e;
	void *q = NULL;
	e = dbn.streamCreate(&q);
	*s = (uintptr_t)q;
	return e;
}
static int dbn_stream_destroy(int dev, uintptr_t s) { dbn.setDevice(dev); return dbn.streamDestroy((void *)s); }
static int dbn_stream_query(int dev, uintptr_t s) { dbn.setDevice(dev); return dbn.streamQuery((void *)s); }

// dbn_init starts a non-blocking communicator; the config is filled as
// NCCL_CONFIG_INITIALIZER fills it, with blocking = 0.
static int dbn_init(int dev, uintptr_t *comm, int nranks, const void *id, int rank) {
	int e = dbn.setDevice(dev);
	if (e) return -e;
	dbnConfig cfg = {sizeof(dbnConfig), 0xcafebeef, 21800, 0, DBN_UNDEF_INT, DBN_UNDEF_INT, DBN_UNDEF_INT, NULL, DBN_UNDEF_INT};
	dbnUniqueId uid;
	memcpy(&uid, id, sizeof uid);
	void *c = NULL;
	int r = dbn.initRankConfig(&c, nranks, uid, rank, &cfg);
	*comm = (uintptr_t)c;
	return r;
}
static int dbn_async_error(uintptr_t comm, int *st) { return dbn.asyncError((void *)comm, st); }
static int dbn_abort(uintptr_t comm) { return dbn.commAbort((void *)comm); }
static int dbn_destroy(uintptr_t comm) { return dbn.commDestroy((void *)comm); }

enum { OP_ALLREDUCE, OP_REDUCE, OP_BROADCAST, OP_ALLGATHER, OP_REDUCESCATTER };

static int dbn_collective(int dev, int kind, uintptr_t s, uintptr_t r, size_t n, int dt, int op, int root, uintptr_t comm, uintptr_t st) {
	int e = dbn.setDevice(dev);
	if (e) return -e;
	void *c = (void *)comm, *q = (void *)st;
	switch (kind) {
	case OP_ALLREDUCE: return dbn.allReduce((void *)s, (void *)r, n, dt, op, c, q);
	case OP_REDUCE: return dbn.reduce((void *)s, (void *)r, n, dt, op, root, c, q);
	case OP_BROADCAST: return dbn.broadcast((void *)s, (void *)r, n, dt, root, c, q);
	case OP_ALLGATHER: return dbn.allGather((void *)s, (void *)r, n, dt, c, q);
	case OP_REDUCESCATTER: return dbn.reduceScatter((void *)s, (void *)r, n, dt, op, c, q);
	}
	return 4; // ncclInvalidArgument
}

// dbn_group issues sends (send[i] != 0) and receives in one
// ncclGroupStart/End on this thread: NCCL's group state is per thread.
static int dbn_group(int dev, int nops, const int *send, const int *peer, const uintptr_t *buf, const size_t *count, int dt, uintptr_t comm, uintptr_t st) {
	int e = dbn.setDevice(dev);
	if (e) return -e;
	int first = dbn.groupStart();
	if (first) return first;
	for (int i = 0; i < nops; i++) {
		int r = send[i] ? dbn.send((void *)buf[i], count[i], dt, peer[i], (void *)comm, (void *)st)
		                : dbn.recv((void *)buf[i], count[i], dt, peer[i], (void *)comm, (void *)st);
		if (r && r != 7 && !first) first = r;
	}
	int end = dbn.groupEnd();
	return first ? first : end;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/distbench/distbench/internal/cuda"
)

// haveCgo: this build can load NCCL.
const haveCgo = true

var (
	loadMu  sync.Mutex
	loaded  string      // what chose the libraries bound, as key says; "" for none
	ncclLib cuda.Loaded // the NCCL bound
)

// key is what chooses the libraries: NCCL's search, and the runtime
// internal/cuda loaded.
func key(rt cuda.Loaded) string {
	return cuda.Finder{}.Key(cuda.NCCL) + "\x00" + fmt.Sprint(rt.Handle())
}

// load finds NCCL, takes the CUDA runtime internal/cuda loaded (the one
// place that loads it), and binds their calls, unless they are the ones
// bound already; a failure is tried again next time. (Only tests change
// the environment in a running process.)
func load() error {
	rt, err := cuda.Runtime()
	if err != nil {
		var nf *cuda.NotFoundError
		if errors.As(err, &nf) {
			return notFound(nf, "install the CUDA runtime")
		}
		return err
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	want := key(rt)
	if loaded == want {
		return nil
	}
	loaded = ""
	lib, err := cuda.Open(cuda.Finder{}, cuda.NCCL, false, nil)
	if err != nil {
		var nf *cuda.NotFoundError
		if !errors.As(err, &nf) {
			return fmt.Errorf("%s: %w", Name, err)
		}
		return notFound(nf, "install NCCL")
	}
	var errbuf [512]C.char
	if C.dbn_bind(lib.Handle(), rt.Handle(), &errbuf[0], C.int(len(errbuf))) != 0 {
		return fmt.Errorf("%s: NCCL (%s) or the CUDA runtime (%s) lacks %s (NCCL 2.18 or later is needed)", Name, lib.Path, rt.Path, C.GoString(&errbuf[0]))
	}
	ncclLib = lib
	loaded = want
	return nil
}

// notFound is a library none of whose candidates opened, as a loadError.
func notFound(nf *cuda.NotFoundError, hint string) error {
	if nf.Override != "" {
		what := nf.Override
		if nf.Library.Name != cuda.NCCL.Name {
			what = nf.Library.Name + " (" + nf.Override + ")"
		}
		return &loadError{what: what, detail: nf.Detail, hint: hint}
	}
	return &loadError{what: nf.Library.Name + " (" + strings.Join(nf.Library.Sonames, ", ") + ")", where: nf.Library.Places(),
		detail: nf.Detail, hint: hint + ", name it in " + nf.Library.Env}
}

// Library is the NCCL this process uses and its version code
// (NCCL_VERSION_CODE: 22703 for 2.27.3), loading it if need be.
func Library() (cuda.Loaded, int, error) {
	if err := load(); err != nil {
		return cuda.Loaded{}, 0, err
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	return ncclLib, version(), nil
}

// CUDA and NCCL codes this package tests for.
const (
	cudaSuccess             = 0
	cudaErrorNotReady       = 600
	cudaErrorNoDevice       = 100
	cudaErrorInsufficientDr = 35
	ncclSuccess             = 0
	ncclInProgress          = 7
	memcpyDeviceToHost      = 2
)

var ncclNames = [...]string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"}

// ncclErr describes an ncclResult_t; comm, if set, adds ncclGetLastError.
func ncclErr(code int, comm uintptr) string {
	name := fmt.Sprintf("ncclResult %d", code)
	if code >= 0 && code < len(ncclNames) {
		name = ncclNames[code]
	}
	s := fmt.Sprintf("%s (%s)", name, C.GoString(C.dbn_nccl_error(C.int(code))))
	if comm != 0 {
		if last := C.GoString(C.dbn_last_error(C.uintptr_t(comm))); last != "" {
			s += ": " + last
		}
	}
	return s
}

func cudaErr(code int) string {
	return cudaErrMsg(code, C.GoString(C.dbn_cuda_error(C.int(code))))
}

func cudaErrMsg(code int, msg string) string {
	switch code {
	case cudaErrorNoDevice:
		return fmt.Sprintf("cudaErrorNoDevice (%d): %s", code, msg)
	case cudaErrorInsufficientDr:
		return fmt.Sprintf("cudaErrorInsufficientDriver (%d): %s", code, msg)
	}
	return fmt.Sprintf("CUDA error %d: %s", code, msg)
}

// deviceCount is cudaGetDeviceCount, as an error where there is no device.
func deviceCount() (int, error) {
	var n C.int
	rc := int(C.dbn_device_count(&n))
	if rc != cudaSuccess {
		return 0, deviceCountErr(rc, cudaErr(rc))
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no usable GPU: cudaGetDeviceCount found none", Name)
	}
	return int(n), nil
}

// deviceCountErr is cudaGetDeviceCount's answer as an error, nil if there
// is a device.
func deviceCountErr(rc int, msg string) error {
	if rc != cudaSuccess {
		return fmt.Errorf("%s: no usable GPU: cudaGetDeviceCount: %s", Name, msg)
	}
	return nil
}

// Version is the loaded NCCL's version code (NCCL_VERSION_CODE).
func version() int {
	var v C.int
	C.dbn_version(&v)
	return int(v)
}

// The calls comm.go makes, with Go types; device memory, communicators and
// streams are addresses the Go side never dereferences.

func uniqueID() ([128]byte, int) {
	var id [128]byte
	rc := C.dbn_unique_id(unsafe.Pointer(&id[0]))
	return id, int(rc)
}

// commInit returns NCCL's result, or minus a CUDA error from cudaSetDevice.
func commInit(dev, nranks int, id [128]byte, rank int) (uintptr, int) {
	var c C.uintptr_t
	rc := C.dbn_init(C.int(dev), &c, C.int(nranks), unsafe.Pointer(&id[0]), C.int(rank))
	return uintptr(c), int(rc)
}

func asyncError(comm uintptr) int {
	var st C.int
	if rc := C.dbn_async_error(C.uintptr_t(comm), &st); rc != ncclSuccess {
		return int(rc)
	}
	return int(st)
}

func commAbort(comm uintptr)   { C.dbn_abort(C.uintptr_t(comm)) }
func commDestroy(comm uintptr) { C.dbn_destroy(C.uintptr_t(comm)) }

func streamCreate(dev int) (uintptr, int) {
	var s C.uintptr_t
	rc := C.dbn_stream_create(C.int(dev), &s)
	return uintptr(s), int(rc)
}

func streamDestroy(dev int, s uintptr) { C.dbn_stream_destroy(C.int(dev), C.uintptr_t(s)) }

func streamQuery(dev int, s uintptr) int { return int(C.dbn_stream_query(C.int(dev), C.uintptr_t(s))) }

func devMalloc(dev, n int) (uintptr, int) {
	var p C.uintptr_t
	rc := C.dbn_malloc(C.int(dev), &p, C.size_t(n))
	return uintptr(p), int(rc)
}

func devFree(dev int, p uintptr) { C.dbn_free(C.int(dev), C.uintptr_t(p)) }

func toDevice(dev int, dst uintptr, src []byte) int {
	if len(src) == 0 {
		return cudaSuccess
	}
	return int(C.dbn_to_device(C.int(dev), C.uintptr_t(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

// devCopy copies n bytes within device dev's memory.
func devCopy(dev int, dst, src uintptr, n int) int {
	if n == 0 {
		return cudaSuccess
	}
	return int(C.dbn_memcpy(C.int(dev), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), 3)) // cudaMemcpyDeviceToDevice
}

func toHost(dev int, dst []byte, src uintptr) int {
	if len(dst) == 0 {
		return cudaSuccess
	}
	return int(C.dbn_to_host(C.int(dev), unsafe.Pointer(&dst[0]), C.uintptr_t(src), C.size_t(len(dst))))
}

// The collectives of dbn_collective.
const (
	opAllReduce = iota
	opReduce
	opBroadcast
	opAllGather
	opReduceScatter
)

func collectiveCall(dev, kind int, send, recv uintptr, count, dt, op, root int, comm, stream uintptr) int {
	return int(C.dbn_collective(C.int(dev), C.int(kind), C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count),
		C.int(dt), C.int(op), C.int(root), C.uintptr_t(comm), C.uintptr_t(stream)))
}

// p2p is one send or receive of a group.
type p2p struct {
	send  bool
	peer  int
	buf   uintptr
	count int
}

func groupCall(dev int, ops []p2p, dt int, comm, stream uintptr) int {
	if len(ops) == 0 {
		return ncclSuccess
	}
	send := make([]C.int, len(ops))
	peer := make([]C.int, len(ops))
	buf := make([]C.uintptr_t, len(ops))
	count := make([]C.size_t, len(ops))
	for i, o := range ops {
		if o.send {
			send[i] = 1
		}
		peer[i], buf[i], count[i] = C.int(o.peer), C.uintptr_t(o.buf), C.size_t(o.count)
	}
	return int(C.dbn_group(C.int(dev), C.int(len(ops)), &send[0], &peer[0], &buf[0], &count[0], C.int(dt), C.uintptr_t(comm), C.uintptr_t(stream)))
}
