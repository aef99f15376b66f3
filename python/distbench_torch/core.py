"""The backend's one core, torch-version independent: a communicator of
libdistbench.so whose operations take torch tensors and return
torch.futures.Future objects, completed by a thread that waits for the
library's work handles in issue order. The process group classes in
backend.py (torch 1.13's ProcessGroup, torch 2.x's Backend) are thin layers
over it.

CPU tensors that are contiguous go to the library as they are, without a
copy. Others (non-contiguous views, CUDA tensors) are staged through a
contiguous host copy (pinned memory for CUDA), copied back when the
operation completes."""

import queue
import sys
import threading

import torch

from . import _lib

_DTYPES = {
    torch.float32: _lib.FLOAT32,
    torch.float64: _lib.FLOAT64,
    torch.float16: _lib.FLOAT16,
    torch.bfloat16: _lib.BFLOAT16,
    torch.int32: _lib.INT32,
    torch.int64: _lib.INT64,
    torch.uint8: _lib.UINT8,
    torch.bool: _lib.UINT8,  # moved as bytes (broadcast, gathers); max/min work too
}

# Reductions by name; backend.py maps torch's ReduceOp onto these.
OPS = {"sum": _lib.SUM, "prod": _lib.PROD, "max": _lib.MAX, "min": _lib.MIN, "avg": _lib.AVG}


class _Buf:
    """A tensor as the library sees it: a pointer, a count and a dtype, with
    a staging copy where the tensor cannot be handed over as it is."""

    def __init__(self, t, what, out=True):
        if not isinstance(t, torch.Tensor):
            raise TypeError("distbench: %s: want a tensor, got %s" % (what, type(t).__name__))
        if t.dtype not in _DTYPES:
            raise ValueError("distbench: %s: dtype %s is not supported (accepted: %s)" % (
                what, t.dtype, ", ".join(str(d).replace("torch.", "") for d in _DTYPES)))
        if t.is_sparse:
            raise ValueError("distbench: %s: sparse tensors are not supported" % what)
        self.tensor, self.out, self.staged = t, out, None
        self.dtype = _DTYPES[t.dtype]
        self.count = t.numel()
        host = t
        if t.device.type != "cpu" or not t.is_contiguous():
            host = torch.empty(t.shape, dtype=t.dtype, pin_memory=t.is_cuda)
            host.copy_(t)
            self.staged = host
        if t.dtype == torch.bool:
            host = host.view(torch.uint8)
        self.host = host
        self.ptr = host.data_ptr() if self.count > 0 else None

    def finish(self):
        """Copies a staged output back into the caller's tensor."""
        if self.staged is not None and self.out:
            self.tensor.copy_(self.staged)


def _value(f):
    return f.value()


class Communicator:
    """A libdistbench communicator over torch tensors. Every operation
    returns a torch.futures.Future whose value is its output tensors, in a
    list, once the operation has completed (or which raises RuntimeError
    naming the rank, the peer and the operation if it failed)."""

    def __init__(self, handle, label):
        self._h = handle
        self._label = label
        r, s = _lib.ctypes.c_int32(), _lib.ctypes.c_int32()
        _lib.check(_lib.lib().distbench_comm_rank(handle, _lib.ctypes.byref(r)), label)
        _lib.check(_lib.lib().distbench_comm_size(handle, _lib.ctypes.byref(s)), label)
        self.rank, self.size = r.value, s.value
        buf = _lib.ctypes.create_string_buffer(64)
        _lib.lib().distbench_comm_strategy(handle, buf, len(buf))
        self.strategy = buf.value.decode()
        self._lock = threading.Lock()
        self._pending = queue.Queue()
        self._closed = False
        self._waiter = threading.Thread(target=self._wait_loop, name="distbench-wait", daemon=True)
        self._waiter.start()

    @classmethod
    def create(cls, env):
        """Joins the job: env (a dict) overrides the process's environment
        for the library (see capi/distbench.h)."""
        lines = "".join("%s=%s\n" % (k, v) for k, v in env.items())
        h = _lib.ctypes.c_int64()
        _lib.check(_lib.lib().distbench_comm_create(lines.encode(), _lib.ctypes.byref(h)), "distbench: init")
        return cls(h.value, "distbench")

    def group(self, ranks):
        """A communicator over ranks (of this one); every member calls it."""
        arr = (_lib.ctypes.c_int32 * len(ranks))(*ranks)
        h = _lib.ctypes.c_int64()
        _lib.check(_lib.lib().distbench_comm_group(self._h, arr, len(ranks), _lib.ctypes.byref(h)), "distbench: new_group")
        return Communicator(h.value, "distbench group")

    def step(self, n):
        """Labels the operations issued from now on as training step n."""
        _lib.check(_lib.lib().distbench_comm_step(self._h, int(n)), "distbench: step")

    def close(self):
        """Waits for the operations in flight and closes the communicator."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._pending.put(None)
        self._waiter.join()
        _lib.check(_lib.lib().distbench_comm_destroy(self._h), "distbench: destroy")

    # The waiter: completes futures in issue order, off the caller's thread
    # (ctypes lets the GIL go while the library waits).
    def _wait_loop(self):
        L = _lib.lib()
        busy = _lib.ctypes.c_double()
        while True:
            item = self._pending.get()
            if item is None:
                return
            work, fut, name, bufs, outputs, after = item
            rc = L.distbench_wait(work, -1, _lib.ctypes.byref(busy))
            err = None
            if rc != _lib.OK:
                err = RuntimeError("distbench rank %d of %d (%s): %s: %s" % (
                    self.rank, self.size, self.strategy, name, _lib.last_error()))
            else:
                try:
                    for b in bufs:
                        b.finish()
                    if after is not None:
                        after()
                except Exception as e:  # a copy back failed: the caller hears of it
                    err = e
            # Completing a future runs its callbacks here; one that raises
            # must not end this thread, which every later operation needs.
            try:
                if err is not None:
                    fut.set_exception(err)
                else:
                    fut.set_result(outputs)
            except Exception as e:
                print("distbench: a callback of %s's future failed: %s" % (name, e), file=sys.stderr)

    def _issue(self, name, call, bufs, outputs, after=None):
        # The waiter completes inner; callers get outer, chained on it. A
        # failure set on inner (set_exception) holds a Python exception,
        # which C++ code that rethrows it without the GIL (DDP's reducer,
        # in torch 1.13) crashes on; through then() it becomes a C++
        # runtime_error carrying the same message, safe anywhere.
        inner = torch.futures.Future()
        fut = inner.then(_value)
        work = _lib.ctypes.c_int64()
        with self._lock:
            if self._closed:
                raise RuntimeError("distbench rank %d: %s after the process group was destroyed" % (self.rank, name))
            rc = call(_lib.ctypes.byref(work))
            if rc != _lib.OK:
                _lib.check(rc, "distbench rank %d of %d (%s): %s" % (self.rank, self.size, self.strategy, name))
            self._pending.put((work.value, inner, name, bufs, outputs, after))
        return fut

    # The operations. Each takes tensors and returns a Future of [outputs].

    def allreduce(self, t, op):
        b = _Buf(t, "allreduce")
        return self._issue("allreduce", lambda w: _lib.lib().distbench_allreduce(self._h, b.ptr, b.count, b.dtype, op, w), [b], [t])

    def reduce(self, t, root, op):
        b = _Buf(t, "reduce")
        return self._issue("reduce", lambda w: _lib.lib().distbench_reduce(self._h, b.ptr, b.count, b.dtype, op, root, w), [b], [t])

    def broadcast(self, t, root):
        b = _Buf(t, "broadcast")
        return self._issue("broadcast", lambda w: _lib.lib().distbench_broadcast(self._h, b.ptr, b.count, b.dtype, root, w), [b], [t])

    def _same(self, name, out, inp, out_count):
        if out.dtype != inp.dtype:
            raise ValueError("distbench: %s: output dtype %s differs from input dtype %s" % (name, out.dtype, inp.dtype))
        if out.numel() != out_count:
            raise ValueError("distbench: %s: output holds %d elements, want %d" % (name, out.numel(), out_count))

    def allgather_flat(self, out, inp):
        """out (size × inp.numel() elements) gets every rank's inp, in rank order."""
        self._same("allgather", out, inp, self.size * inp.numel())
        bo, bi = _Buf(out, "allgather"), _Buf(inp, "allgather", out=False)
        return self._issue("allgather", lambda w: _lib.lib().distbench_allgather(self._h, bo.ptr, bi.ptr, bi.count, bi.dtype, w), [bo, bi], [out])

    def reduce_scatter_flat(self, out, inp, op):
        """out gets block rank of inp (size × out.numel()) reduced over ranks."""
        self._same("reduce_scatter", inp, out, self.size * out.numel())
        bo, bi = _Buf(out, "reduce_scatter"), _Buf(inp, "reduce_scatter", out=False)
        return self._issue("reduce_scatter", lambda w: _lib.lib().distbench_reduce_scatter(self._h, bo.ptr, bi.ptr, bo.count, bo.dtype, op, w), [bo, bi], [out])

    def alltoall_flat(self, out, inp):
        """Block j of inp goes to rank j, which keeps it as block rank of out."""
        self._same("alltoall", out, inp, inp.numel())
        if inp.numel() % self.size:
            raise ValueError("distbench: alltoall: %d elements do not split evenly over %d ranks" % (inp.numel(), self.size))
        bo, bi = _Buf(out, "alltoall"), _Buf(inp, "alltoall", out=False)
        return self._issue("alltoall", lambda w: _lib.lib().distbench_alltoall(self._h, bo.ptr, bi.ptr, bi.count, bi.dtype, w), [bo, bi], [out])

    def gather_flat(self, out, inp, root):
        """root's out (size × inp.numel()) gets every rank's inp; out may be
        None elsewhere."""
        if out is None:
            out = torch.empty(self.size * inp.numel(), dtype=inp.dtype)
        self._same("gather", out, inp, self.size * inp.numel())
        bo, bi = _Buf(out, "gather"), _Buf(inp, "gather", out=False)
        return self._issue("gather", lambda w: _lib.lib().distbench_gather(self._h, bo.ptr, bi.ptr, bi.count, bi.dtype, root, w), [bo, bi], [out])

    def scatter_flat(self, out, inp, root):
        """Block i of root's inp (size × out.numel()) goes to rank i's out;
        inp may be None elsewhere."""
        if inp is None:
            inp = torch.empty(self.size * out.numel(), dtype=out.dtype)
        self._same("scatter", inp, out, self.size * out.numel())
        bo, bi = _Buf(out, "scatter"), _Buf(inp, "scatter", out=False)
        return self._issue("scatter", lambda w: _lib.lib().distbench_scatter(self._h, bo.ptr, bi.ptr, bo.count, bo.dtype, root, w), [bo, bi], [out])

    def barrier(self):
        return self._issue("barrier", lambda w: _lib.lib().distbench_barrier(self._h, w), [], [])

    def send(self, t, peer, tag):
        b = _Buf(t, "send", out=False)
        return self._issue("send", lambda w: _lib.lib().distbench_send(self._h, b.ptr, b.count, b.dtype, peer, tag, w), [b], [t])

    def recv(self, t, peer, tag):
        b = _Buf(t, "recv")
        return self._issue("recv", lambda w: _lib.lib().distbench_recv(self._h, b.ptr, b.count, b.dtype, peer, tag, w), [b], [t])
