"""The process group torch.distributed calls: one class of collectives
(_Collectives) over core.Communicator, mixed into torch 1.13's
dist.ProcessGroup and, where it exists, torch 2.x's c10d Backend, and the
creator function registered as backend "distbench"."""

import atexit
import collections
import datetime
import os
import sys

import torch
import torch.distributed as dist

from .core import OPS, Communicator

_REDUCE_OPS = {
    dist.ReduceOp.SUM: "sum",
    dist.ReduceOp.PRODUCT: "prod",
    dist.ReduceOp.MAX: "max",
    dist.ReduceOp.MIN: "min",
}
if hasattr(dist.ReduceOp, "AVG"):
    _REDUCE_OPS[dist.ReduceOp.AVG] = "avg"


def _op(opts):
    op = getattr(opts, "reduceOp", dist.ReduceOp.SUM)
    for k, v in _REDUCE_OPS.items():
        if op == k:
            return OPS[v]
    raise ValueError("distbench: reduction %s is not supported (accepted: SUM, PRODUCT, MAX, MIN, AVG)" % (op,))


class _Work(dist._Work):
    """An operation as torch sees it: its future, and a wait that raises
    the operation's error. (torch 1.13's _create_work_from_future waits
    without raising, so a failed operation would look like a finished one.)"""

    def __init__(self, fut):
        super().__init__()
        self._fut = fut

    def wait(self, timeout=None):
        self._fut.wait()  # raises the operation's RuntimeError
        return True

    def get_future(self):
        return self._fut

    def is_completed(self):
        return self._fut.done()

    def is_success(self):
        if not self._fut.done():
            return False
        try:
            self._fut.wait()
            return True
        except Exception:
            return False

    def exception(self):
        try:
            self._fut.wait()
        except Exception as e:
            return e
        return None

    def result(self):
        return self._fut.wait()


# The works handed out lately, kept alive here. torch's C++ holds a Python
# Work through a pybind trampoline that forwards wait() and get_future() to
# the Python object only while that object lives; once Python drops it
# (as soon as a C++ caller such as DDP's reducer has it), the C++ object
# falls back to a base wait that never returns. C++ callers call wait or
# get_future right after the operation is issued, so keeping the last few
# thousand is enough, and bounds the memory (torch's own
# test_c10d_pypg.py keeps every one).
_recent = collections.deque(maxlen=4096)


def _work(fut):
    w = _Work(fut)
    _recent.append(w)
    return w


def _all(futs, outputs):
    """One future for several, whose value is outputs."""
    if len(futs) == 1:
        return futs[0]
    return torch.futures.collect_all(futs).then(lambda f: [x.wait() for x in f.value()] and outputs)


def _one(tensors, what):
    if len(tensors) != 1:
        raise ValueError("distbench: %s takes one tensor per process, got %d (one device per process, as gloo's CPU path)" % (what, len(tensors)))
    return tensors[0]


class _Collectives:
    """What torch.distributed calls on a process group, over self._core (a
    core.Communicator). Signatures follow c10d's ProcessGroup, whose
    torch.distributed wrappers build the options objects."""

    def _init_core(self, core):
        self._core = core

    def getBackendName(self):
        return "distbench"

    def _get_backend_name(self):
        return "distbench"

    def allreduce(self, tensors, opts=None):
        op = _op(opts)
        return _work(_all([self._core.allreduce(t, op) for t in tensors], list(tensors)))

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def reduce(self, tensors, opts):
        t = _one(tensors, "reduce")
        return _work(self._core.reduce(t, opts.rootRank, _op(opts)))

    def broadcast(self, tensors, opts):
        return _work(_all([self._core.broadcast(t, opts.rootRank) for t in tensors], list(tensors)))

    def _allgather_base(self, output, input, opts=None):
        return _work(self._core.allgather_flat(output.view(-1), input.reshape(-1)))

    def allgather(self, output_lists, input_tensors, opts=None):
        inp = _one(input_tensors, "allgather")
        outs = output_lists[0]
        flat = torch.empty(self._core.size * inp.numel(), dtype=inp.dtype)
        fut = self._core.allgather_flat(flat, inp.reshape(-1))

        def scatter_out(f):
            f.wait()
            for i, o in enumerate(outs):
                o.copy_(flat[i * inp.numel():(i + 1) * inp.numel()].view_as(o))
            return output_lists
        return _work(fut.then(scatter_out))

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        return _work(_all([self._core.allgather_flat(o.view(-1), i.reshape(-1)) for o, i in zip(outputs, inputs)], list(outputs)))

    def _reduce_scatter_base(self, output, input, opts=None):
        return _work(self._core.reduce_scatter_flat(output.view(-1), input.reshape(-1), _op(opts)))

    def reduce_scatter(self, output_tensors, input_lists, opts=None):
        out = _one(output_tensors, "reduce_scatter")
        flat = torch.cat([t.reshape(-1) for t in input_lists[0]])
        return _work(self._core.reduce_scatter_flat(out.view(-1) if out.is_contiguous() else out, flat, _op(opts)))

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        n = self._core.size
        for name, splits, t in (("output", output_split_sizes, output), ("input", input_split_sizes, input)):
            if splits and any(s != t.shape[0] // n for s in splits):
                raise ValueError("distbench: alltoall with uneven %s splits %s is not supported (accepted: equal splits)" % (name, list(splits)))
        return _work(self._core.alltoall_flat(output.view(-1), input.reshape(-1)))

    def alltoall(self, output_tensors, input_tensors, opts=None):
        n = self._core.size
        sizes = {t.numel() for t in list(output_tensors) + list(input_tensors)}
        if len(sizes) != 1 or len(output_tensors) != n or len(input_tensors) != n:
            raise ValueError("distbench: alltoall wants %d tensors of one size each way (accepted: equal splits)" % n)
        flat_in = torch.cat([t.reshape(-1) for t in input_tensors])
        flat_out = torch.empty_like(flat_in)
        k = flat_in.numel() // n

        def split_out(f):
            f.wait()
            for i, o in enumerate(output_tensors):
                o.copy_(flat_out[i * k:(i + 1) * k].view_as(o))
            return list(output_tensors)
        return _work(self._core.alltoall_flat(flat_out, flat_in).then(split_out))

    def gather(self, output_lists, input_tensors, opts):
        inp = _one(input_tensors, "gather")
        root = opts.rootRank
        outs = output_lists[0] if output_lists else []
        flat = torch.empty(self._core.size * inp.numel(), dtype=inp.dtype)

        def split_out(f):
            f.wait()
            for i, o in enumerate(outs):
                o.copy_(flat[i * inp.numel():(i + 1) * inp.numel()].view_as(o))
            return output_lists
        return _work(self._core.gather_flat(flat, inp.reshape(-1), root).then(split_out))

    def scatter(self, output_tensors, input_lists, opts):
        out = _one(output_tensors, "scatter")
        root = opts.rootRank
        flat = None
        if input_lists and len(input_lists[0]) > 0:
            flat = torch.cat([t.reshape(-1) for t in input_lists[0]])
        return _work(self._core.scatter_flat(out, flat, root))

    def barrier(self, opts=None):
        return _work(self._core.barrier())

    def send(self, tensors, dst, tag):
        return _work(self._core.send(_one(tensors, "send"), dst, tag))

    def recv(self, tensors, src, tag):
        return _work(self._core.recv(_one(tensors, "recv"), src, tag))


class ProcessGroupDistbench(_Collectives, dist.ProcessGroup):
    """torch 1.13's form: a Python ProcessGroup (as torch's own
    test/distributed/test_c10d_pypg.py)."""

    def __init__(self, core, rank, size):
        dist.ProcessGroup.__init__(self, rank, size)
        self._init_core(core)

    def __del__(self):
        # destroy_process_group drops the group; the communicator then
        # closes, letting ranks still finishing be served (ps).
        try:
            self._core.close()
        except Exception:
            pass


_C10dBackend = getattr(torch._C._distributed_c10d, "Backend", None)
BackendDistbench = None
if _C10dBackend is not None:
    class BackendDistbench(_Collectives, _C10dBackend):  # noqa: F811
        """torch 2.x's form: a c10d Backend that torch wraps in its
        ProcessGroup. Untested here (Debian has torch 1.13)."""

        def __init__(self, core, rank, size):
            _C10dBackend.__init__(self, rank, size)
            self._init_core(core)


class Options:
    """pg_options for init_process_group(backend="distbench"): what the
    DISTBENCH_* variables say, per process group. Unset fields fall back to
    the environment."""

    def __init__(self, strategy=None, options=None, transport=None, link=None, timeout=None, out=None):
        self.strategy, self.options, self.transport, self.link, self.timeout, self.out = strategy, options, transport, link, timeout, out

    def env(self):
        e = {}
        if self.strategy:
            e["DISTBENCH_STRATEGY"] = self.strategy
        if self.options:
            opts = self.options
            if isinstance(opts, dict):
                opts = ",".join("%s=%s" % kv for kv in opts.items())
            e["DISTBENCH_OPTIONS"] = opts
        if self.transport:
            e["DISTBENCH_TRANSPORT"] = self.transport
        if self.link:
            e["DISTBENCH_LINK"] = self.link
        if self.timeout:
            t = self.timeout
            e["DISTBENCH_TIMEOUT"] = "%gs" % (t.total_seconds() if isinstance(t, datetime.timedelta) else float(t))
        if self.out:
            e["DISTBENCH_OUT"] = self.out
        return e


def _tcp_store(store):
    """The TCPStore under torch's PrefixStores: its host and port."""
    seen = 0
    while hasattr(store, "underlying_store") and seen < 16:
        store, seen = store.underlying_store, seen + 1
    if hasattr(store, "host") and hasattr(store, "port"):
        return store.host, store.port
    raise RuntimeError(
        "distbench: the job's store is a %s; the distbench backend meets through torch's TCPStore "
        "(init_method env:// or tcp://, as torchrun's)" % type(store).__name__)


# The world communicator of this process (None unless the default group is
# distbench's): groups without options of their own are made from it.
_world = None


def world():
    """This process's world communicator (None unless init_process_group
    chose backend distbench)."""
    return _world


def _communicator(store, rank, size, timeout, global_ranks, group_id, pg_options):
    global _world
    default = not dist.is_initialized()
    if pg_options is not None and not isinstance(pg_options, Options):
        raise TypeError("distbench: pg_options must be distbench_torch.Options, got %s" % type(pg_options).__name__)
    if not default and _world is not None and not _world._closed and pg_options is None:
        # new_group: a group of the world's communicator.
        g = _world.group(list(global_ranks))
        _live.append(g)
        return g
    # A communicator of its own, which meets through the job's store:
    # the default group, or a group with options of its own (a gloo job
    # comparing strategies).
    env = {}
    host, port = _tcp_store(store)
    env["DISTBENCH_INIT"] = "tcp://%s:%d" % ("[%s]" % host if ":" in host else host, port)
    env["DISTBENCH_TORCH_STORE"] = "1"
    env["RANK"], env["WORLD_SIZE"] = str(rank), str(size)
    if not os.environ.get("DISTBENCH_TIMEOUT") and timeout is not None:
        env["DISTBENCH_TIMEOUT"] = "%gs" % timeout.total_seconds()
    # Every group is a job of its own on the store, named by torch's
    # group name (the same on every rank), so that groups and later
    # init_process_groups do not meet each other's registrations.
    base = os.environ.get("DISTBENCH_JOB_ID") or ("torch-" + os.environ.get("TORCHELASTIC_RUN_ID", "job"))
    env["DISTBENCH_JOB_ID"] = "%s-%d-%s" % (base, _generation(), group_id)
    if not default:
        # One recorder a job: the default group's (results.jsonl has one
        # writer), unless these options name a directory of their own.
        env["DISTBENCH_OUT"] = ""
    if pg_options is not None:
        env.update(pg_options.env())
    core = Communicator.create(env)
    _live.append(core)
    if default:
        _world = core
    return core


_inits = 0


def _generation():
    """How many default groups this process has made, this one included:
    a job that destroys its process group and makes another meets anew."""
    global _inits
    if not dist.is_initialized():
        _inits += 1
    return _inits


# Every communicator this process made, closed at exit if the job did not
# destroy its groups: a parameter server's colocated server must keep
# serving ranks that finish later (Close waits for them).
_live = []


@atexit.register
def _close_all():
    for c in reversed(_live):
        try:
            c.close()
        except Exception as e:  # the exit goes on; say why it was not clean
            print("distbench: closing at exit: %s" % e, file=sys.stderr)


def create_v1(backend_opts, pg_options=None):
    """torch 1.13's creator (extended_api=True)."""
    core = _communicator(backend_opts.store, backend_opts.group_rank, backend_opts.group_size,
                         backend_opts.timeout, backend_opts.global_ranks_in_group, backend_opts.group_id, pg_options)
    return ProcessGroupDistbench(core, backend_opts.group_rank, backend_opts.group_size)


def create_v2(backend_opts, pg_options=None):
    """torch 2.x's creator (extended_api=True): a Backend torch wraps."""
    core = _communicator(backend_opts.store, backend_opts.group_rank, backend_opts.group_size,
                         backend_opts.timeout, backend_opts.global_ranks_in_group, backend_opts.group_id, pg_options)
    return BackendDistbench(core, backend_opts.group_rank, backend_opts.group_size)


def register():
    """Registers backend "distbench" with torch.distributed (idempotent)."""
    if "DISTBENCH" in getattr(dist.Backend, "_plugins", {}):
        return
    major = int(torch.__version__.split(".")[0])
    if major >= 2 and BackendDistbench is not None:
        dist.Backend.register_backend("distbench", create_v2, extended_api=True, devices=["cpu", "cuda"])
    else:
        dist.Backend.register_backend("distbench", create_v1, extended_api=True)
