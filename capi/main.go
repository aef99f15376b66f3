// Command capi is libdistbench.so, the C interface to distbench's
// collective API (see distbench.h, the interface's documentation): a Go
// c-shared library, built with
//
//	go build -buildmode=c-shared -o bin/libdistbench.so ./capi
//
// (make capi). It is a thin layer: handles, C types and error codes over
// capi/bridge, which builds communicators from the environment with the
// same rendezvous, transport and strategies as the distbench binary. No
// panic crosses it: every exported function recovers and returns
// DISTBENCH_ERR_INTERNAL with the panic as the thread's last error.
package main

/*
#include <pthread.h>
#include <string.h>
#include "distbench.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/distbench/distbench/capi/bridge"
	"github.com/distbench/distbench/collective"
	_ "github.com/distbench/distbench/strategies/all" // the strategies a job may name
)

// main is required of a c-shared build and never runs.
func main() {}

// handles maps the integers C holds to Go values, which C may not hold.
type handles[T any] struct {
	mu   sync.Mutex
	next int64
	m    map[int64]T
}

func (h *handles[T]) put(v T) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[int64]T{}
	}
	h.next++
	h.m[h.next] = v
	return h.next
}

func (h *handles[T]) get(id int64) (T, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[id]
	return v, ok
}

func (h *handles[T]) drop(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, id)
}

var (
	comms handles[*bridge.Comm]
	works handles[*bridge.Op]
)

// lastErrors is each C thread's last error message: a caller reads it with
// distbench_last_error right after the call that failed, on its thread.
var lastErrors sync.Map // uint64(pthread_t) → string

func thread() uint64 { return uint64(C.pthread_self()) }

// status records err as the calling thread's last error and returns its
// code.
func status(err error) C.int {
	if err == nil {
		lastErrors.Delete(thread())
		return C.DISTBENCH_OK
	}
	lastErrors.Store(thread(), err.Error())
	var pe *collective.PeerError
	switch {
	case errors.Is(err, collective.ErrTimeout):
		return C.DISTBENCH_ERR_TIMEOUT
	case errors.As(err, &pe), errors.Is(err, collective.ErrAborted):
		return C.DISTBENCH_ERR_PEER
	case errors.Is(err, collective.ErrClosed):
		return C.DISTBENCH_ERR_CLOSED
	case errors.Is(err, collective.ErrUnsupported):
		return C.DISTBENCH_ERR_UNSUPPORTED
	case errors.Is(err, collective.ErrInvalid), errors.As(err, new(*invalidError)):
		return C.DISTBENCH_ERR_INVALID
	}
	return C.DISTBENCH_ERR_INTERNAL
}

// invalidError is a bad argument at this interface.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return "distbench: " + e.msg }

func invalidf(format string, args ...any) error {
	return &invalidError{fmt.Sprintf(format, args...)}
}

// guard turns a panic into DISTBENCH_ERR_INTERNAL; every export defers it.
func guard(rc *C.int) {
	if p := recover(); p != nil {
		lastErrors.Store(thread(), fmt.Sprintf("distbench: internal error (a bug; please report it): %v", p))
		*rc = C.DISTBENCH_ERR_INTERNAL
	}
}

//export distbench_version
func distbench_version() C.int { return C.DISTBENCH_CAPI_VERSION }

// copyOut copies s into buf as C's snprintf would and returns len(s).
func copyOut(s string, buf *C.char, n C.size_t) C.size_t {
	if buf != nil && n > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
		k := copy(b[:n-1], s)
		b[k] = 0
	}
	return C.size_t(len(s))
}

//export distbench_last_error
func distbench_last_error(buf *C.char, n C.size_t) C.size_t {
	msg, _ := lastErrors.Load(thread())
	s, _ := msg.(string)
	return copyOut(s, buf, n)
}

// overlay reads "NAME=VALUE" lines over the process's environment.
func overlay(env *C.char) (func(string) string, error) {
	if env == nil {
		return os.Getenv, nil
	}
	vars := map[string]string{}
	for _, line := range strings.Split(C.GoString(env), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return nil, invalidf("distbench_comm_create: env line %q is not NAME=VALUE", line)
		}
		vars[k] = v
	}
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return os.Getenv(k)
	}, nil
}

//export distbench_comm_create
func distbench_comm_create(env *C.char, out *C.distbench_comm) (rc C.int) {
	defer guard(&rc)
	if out == nil {
		return status(invalidf("distbench_comm_create: out is NULL"))
	}
	getenv, err := overlay(env)
	if err != nil {
		return status(err)
	}
	c, err := bridge.Open(context.Background(), getenv)
	if err != nil {
		return status(err)
	}
	*out = C.distbench_comm(comms.put(c))
	return status(nil)
}

func comm(h C.distbench_comm) (*bridge.Comm, error) {
	c, ok := comms.get(int64(h))
	if !ok {
		return nil, invalidf("no communicator %d (destroyed, or never created)", int64(h))
	}
	return c, nil
}

//export distbench_comm_group
func distbench_comm_group(h C.distbench_comm, ranks *C.int32_t, n C.int32_t, out *C.distbench_comm) (rc C.int) {
	defer guard(&rc)
	c, err := comm(h)
	if err != nil {
		return status(err)
	}
	if out == nil || n < 0 || (n > 0 && ranks == nil) {
		return status(invalidf("distbench_comm_group: want %d ranks and an out pointer", n))
	}
	rs := make([]int, n)
	for i, r := range unsafe.Slice((*int32)(unsafe.Pointer(ranks)), int(n)) {
		rs[i] = int(r)
	}
	g, err := c.Group(rs)
	if err != nil {
		return status(err)
	}
	*out = C.distbench_comm(comms.put(g))
	return status(nil)
}

//export distbench_comm_rank
func distbench_comm_rank(h C.distbench_comm, rank *C.int32_t) (rc C.int) {
	defer guard(&rc)
	c, err := comm(h)
	if err == nil && rank != nil {
		*rank = C.int32_t(c.Rank())
	}
	return status(err)
}

//export distbench_comm_size
func distbench_comm_size(h C.distbench_comm, size *C.int32_t) (rc C.int) {
	defer guard(&rc)
	c, err := comm(h)
	if err == nil && size != nil {
		*size = C.int32_t(c.Size())
	}
	return status(err)
}

//export distbench_comm_strategy
func distbench_comm_strategy(h C.distbench_comm, buf *C.char, n C.size_t) C.size_t {
	c, err := comm(h)
	if err != nil {
		return copyOut("", buf, n)
	}
	return copyOut(c.Strategy(), buf, n)
}

//export distbench_comm_step
func distbench_comm_step(h C.distbench_comm, step C.int64_t) (rc C.int) {
	defer guard(&rc)
	c, err := comm(h)
	if err == nil {
		c.SetStep(int64(step))
	}
	return status(err)
}

//export distbench_comm_destroy
func distbench_comm_destroy(h C.distbench_comm) (rc C.int) {
	defer guard(&rc)
	c, err := comm(h)
	if err != nil {
		return status(err)
	}
	comms.drop(int64(h))
	return status(c.Close())
}

// tensor is a view of count elements of dtype at p, memory C owns.
func tensor(p unsafe.Pointer, count C.int64_t, dtype C.int32_t) (collective.Tensor, error) {
	dt := collective.DType(dtype)
	if !dt.Valid() {
		return collective.Tensor{}, invalidf("dtype %d (accepted: 1..7, DISTBENCH_FLOAT32..DISTBENCH_UINT8)", int32(dtype))
	}
	if count < 0 {
		return collective.Tensor{}, invalidf("count %d: must not be negative", int64(count))
	}
	if count > 0 && p == nil {
		return collective.Tensor{}, invalidf("NULL buffer for %d elements", int64(count))
	}
	n := int(count) * dt.Size()
	if n == 0 {
		return collective.Tensor{DType: dt, Data: []byte{}}, nil
	}
	return collective.Tensor{DType: dt, Data: unsafe.Slice((*byte)(p), n)}, nil
}

func reduceOp(op C.int32_t) (collective.Op, error) {
	o := collective.Op(op)
	if !o.Valid() {
		return 0, invalidf("reduction %d (accepted: 1..5, DISTBENCH_SUM..DISTBENCH_AVG)", int32(op))
	}
	return o, nil
}

// issue runs one operation's export: look up the communicator, build the
// arguments, start it, hand out its work handle.
func issue(h C.distbench_comm, w *C.distbench_work, start func(c *bridge.Comm) (*bridge.Op, error)) C.int {
	if w == nil {
		return status(invalidf("work pointer is NULL"))
	}
	c, err := comm(h)
	if err != nil {
		return status(err)
	}
	op, err := start(c)
	if err != nil {
		return status(err)
	}
	*w = C.distbench_work(works.put(op))
	return status(nil)
}

//export distbench_allreduce
func distbench_allreduce(h C.distbench_comm, buf unsafe.Pointer, count C.int64_t, dtype, op C.int32_t, w *C.distbench_work) (rc C.int) {
	defer guard(&rc)
	return issue(h, w, func(c *bridge.Comm) (*bridge.Op, error) {
		t, err := tensor(buf, count, dtype)
		o, err2 := reduceOp(op)
		if err := errors.Join(err, err2); err != nil {
			return nil, err
		}
		return c.AllReduce(t, o), nil
	})
}

//export distbench_reduce
func distbench_reduce(h C.distbench_comm, buf unsafe.Pointer, count C.int64_t, dtype, op, root C.int32_t, w *C.distbench_work) (rc C.int) {
	defer guard(&rc)
	return issue(h, w, func(c *bridge.Comm) (*bridge.Op, error) {
		t, err := tensor(buf, count, dtype)
		o, err2 := reduceOp(op)
		if err := errors.Join(err, err2); err != nil {
			return nil, err
		}
		return c.Reduce(t, int(root), o), nil
	})
}

//export distbench_broadcast
func distbench_broadcast(h C.distbench_comm, buf unsafe.Pointer, count C.int64_t, dtype, root C.int32_t, w *C.distbench_work) (rc C.int) {
	defer guard(&rc)
	return issue(h, w, func(c *bridge.Comm) (*bridge.Op, error) {
		t, err := tensor(buf, count, dtype)
		if err != nil {
			return nil, err
		}
		return c.Broadcast(t, int(root)), nil
	})
}

// pair is the out and in tensors of an out-of-place collective, of
// outCount and inCount elements.
func pair(out, in unsafe.Pointer, outCount, inCount C.int64_t, dtype C.int32_t) (collective.Tensor, collective.Tensor, error) {
	o, err := tensor(out, outCount, dtype)
	i, err2 := tensor(in, inCount, dtype)
	return o, i, errors.Join(err, err2)
}

//export distbench_allgather
func distbench_allgather(h C.distbench_comm, out, in unsafe.Pointer, count C.int64_t, dtype C.int32_t, w *C.distbench_work) (rc C.int) {
	defer guard(&rc)
	return issue(h, w, func(c *bridge.Comm) (*bridge.Op, error) {
		o, i, err := pair(out, in, count*C.int64_t(c.Size()), count, dtype)
		if err != nil {
			return nil, err
		}
		return c.AllGather(o, i), nil
	})
}

//export distbench_reduce_scatter
func distbench_reduce_scatter(h C.distbench_comm, out, in unsafe.Pointer, count C.int64_t, dtype, op C.int32_t, w *C.distbench_work) (rc C.int) {
	defer guard(&rc)
	return issue(h, w, func(c *bridge.Comm) (*bridge.Op, error) {
		o, i, err := pair(out, in, count, count*C.int64_t(c.Size()), dtype)
		r, err2 := reduceOp(op)
		if err := errors.Join(err, err2); err != nil {
			return nil, err
		}
		return c.ReduceScatter(o, i, r), nil
	})
}

//export distbench_alltoall
func distbench_alltoall(h C.distbench_comm, out, in unsafe.Pointer, count C.int64_t, dtype C.int32_t, w *C.distbench_work) (rc C.int) {
	defer guard(&rc)
	return issue(h, w, func(c *bridge.Comm) (*bridge.Op, error) {
		if int64(count)%int64(c.Size()) != 0 {
			return nil, invalidf("alltoall: count %d is not a multiple of the group size %d", int64(count), c.Size())
		}
		o, i, err := pair(out, in, count, count, dtype)
		if err != nil {
			return nil, err
		}
		return c.AllToAll(o, i), nil
	})
}

//export distbench_gather
func distbench_gather(h C.distbench_comm, out, in unsafe.Pointer, count C.int64_t, dtype, root C.int32_t, w *C.distbench_work) (rc C.int) {
	defer guard(&rc)
	return issue(h, w, func(c *bridge.Comm) (*bridge.Op, error) {
		o, i, err := pair(out, in, count*C.int64_t(c.Size()), count, dtype)
		if err != nil {
			return nil, err
		}
		return c.Gather(o, i, int(root)), nil
	})
}

//export distbench_scatter
func distbench_scatter(h C.distbench_comm, out, in unsafe.Pointer, count C.int64_t, dtype, root C.int32_t, w *C.distbench_work) (rc C.int) {
	defer guard(&rc)
	return issue(h, w, func(c *bridge.Comm) (*bridge.Op, error) {
		o, i, err := pair(out, in, count, count*C.int64_t(c.Size()), dtype)
		if err != nil {
			return nil, err
		}
		return c.Scatter(o, i, int(root)), nil
	})
}

//export distbench_barrier
func distbench_barrier(h C.distbench_comm, w *C.distbench_work) (rc C.int) {
	defer guard(&rc)
	return issue(h, w, func(c *bridge.Comm) (*bridge.Op, error) { return c.Barrier(), nil })
}

//export distbench_send
func distbench_send(h C.distbench_comm, buf unsafe.Pointer, count C.int64_t, dtype, peer, tag C.int32_t, w *C.distbench_work) (rc C.int) {
	defer guard(&rc)
	return issue(h, w, func(c *bridge.Comm) (*bridge.Op, error) {
		t, err := tensor(buf, count, dtype)
		if err != nil {
			return nil, err
		}
		return c.Send(t, int(peer), int(tag)), nil
	})
}

//export distbench_recv
func distbench_recv(h C.distbench_comm, buf unsafe.Pointer, count C.int64_t, dtype, peer, tag C.int32_t, w *C.distbench_work) (rc C.int) {
	defer guard(&rc)
	return issue(h, w, func(c *bridge.Comm) (*bridge.Op, error) {
		t, err := tensor(buf, count, dtype)
		if err != nil {
			return nil, err
		}
		return c.Recv(t, int(peer), int(tag)), nil
	})
}

//export distbench_wait
func distbench_wait(h C.distbench_work, timeoutMs C.int64_t, busyUs *C.double) (rc C.int) {
	defer guard(&rc)
	op, ok := works.get(int64(h))
	if !ok {
		return status(invalidf("no work %d (already waited for, or never issued)", int64(h)))
	}
	if timeoutMs >= 0 {
		select {
		case <-op.Done():
		case <-time.After(time.Duration(timeoutMs) * time.Millisecond):
			lastErrors.Delete(thread())
			return C.DISTBENCH_ERR_AGAIN
		}
	}
	err := op.Wait(context.Background())
	works.drop(int64(h))
	if busyUs != nil {
		*busyUs = C.double(op.BusyUs())
	}
	return status(err)
}
