"""ctypes bindings to libdistbench.so (capi/distbench.h), and nothing else:
no torch here, so that the C interface can be driven from plain Python."""

import ctypes
import os

# The interface version this package was written against
# (DISTBENCH_CAPI_VERSION in capi/distbench.h).
CAPI_VERSION = 1

OK = 0
ERR_INVALID, ERR_TIMEOUT, ERR_PEER, ERR_CLOSED, ERR_UNSUPPORTED, ERR_AGAIN, ERR_INTERNAL = range(1, 8)

FLOAT32, FLOAT64, FLOAT16, BFLOAT16, INT32, INT64, UINT8 = range(1, 8)
SUM, PROD, MAX, MIN, AVG = range(1, 6)

_c_comm = ctypes.c_int64
_c_work = ctypes.c_int64
_p = ctypes.c_void_p
_i32 = ctypes.c_int32
_i64 = ctypes.c_int64
_pw = ctypes.POINTER(_c_work)

_SIGNATURES = {
    "distbench_version": ([], ctypes.c_int),
    "distbench_last_error": ([ctypes.c_char_p, ctypes.c_size_t], ctypes.c_size_t),
    "distbench_comm_create": ([ctypes.c_char_p, ctypes.POINTER(_c_comm)], ctypes.c_int),
    "distbench_comm_group": ([_c_comm, ctypes.POINTER(_i32), _i32, ctypes.POINTER(_c_comm)], ctypes.c_int),
    "distbench_comm_rank": ([_c_comm, ctypes.POINTER(_i32)], ctypes.c_int),
    "distbench_comm_size": ([_c_comm, ctypes.POINTER(_i32)], ctypes.c_int),
    "distbench_comm_strategy": ([_c_comm, ctypes.c_char_p, ctypes.c_size_t], ctypes.c_size_t),
    "distbench_comm_step": ([_c_comm, _i64], ctypes.c_int),
    "distbench_comm_destroy": ([_c_comm], ctypes.c_int),
    "distbench_allreduce": ([_c_comm, _p, _i64, _i32, _i32, _pw], ctypes.c_int),
    "distbench_reduce": ([_c_comm, _p, _i64, _i32, _i32, _i32, _pw], ctypes.c_int),
    "distbench_broadcast": ([_c_comm, _p, _i64, _i32, _i32, _pw], ctypes.c_int),
    "distbench_allgather": ([_c_comm, _p, _p, _i64, _i32, _pw], ctypes.c_int),
    "distbench_reduce_scatter": ([_c_comm, _p, _p, _i64, _i32, _i32, _pw], ctypes.c_int),
    "distbench_alltoall": ([_c_comm, _p, _p, _i64, _i32, _pw], ctypes.c_int),
    "distbench_gather": ([_c_comm, _p, _p, _i64, _i32, _i32, _pw], ctypes.c_int),
    "distbench_scatter": ([_c_comm, _p, _p, _i64, _i32, _i32, _pw], ctypes.c_int),
    "distbench_barrier": ([_c_comm, _pw], ctypes.c_int),
    "distbench_send": ([_c_comm, _p, _i64, _i32, _i32, _i32, _pw], ctypes.c_int),
    "distbench_recv": ([_c_comm, _p, _i64, _i32, _i32, _i32, _pw], ctypes.c_int),
    "distbench_wait": ([_c_work, _i64, ctypes.POINTER(ctypes.c_double)], ctypes.c_int),
}


def _candidates():
    env = os.environ.get("DISTBENCH_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    # python/distbench_torch/ -> the repository's bin/, where `make capi`
    # puts it; then the package's own directory; then the loader's path.
    return [
        os.path.join(here, "..", "..", "bin", "libdistbench.so"),
        os.path.join(here, "libdistbench.so"),
        "libdistbench.so",
    ]


_lib = None


def lib():
    """The loaded library, checked for the interface version."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            handle = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (args, res) in _SIGNATURES.items():
            fn = getattr(handle, name)
            fn.argtypes, fn.restype = args, res
        v = handle.distbench_version()
        if v != CAPI_VERSION:
            raise RuntimeError(
                "distbench: %s implements the C interface version %d; this package needs %d: rebuild it (make capi)" % (path, v, CAPI_VERSION))
        _lib = handle
        return _lib
    raise RuntimeError(
        "distbench: libdistbench.so not found (build it with `make capi`, or set DISTBENCH_LIB to its path); tried: " + "; ".join(tried))


def last_error():
    """The calling thread's last error message."""
    buf = ctypes.create_string_buffer(4096)
    n = lib().distbench_last_error(buf, len(buf))
    if n >= len(buf):
        buf = ctypes.create_string_buffer(n + 1)
        lib().distbench_last_error(buf, len(buf))
    return buf.value.decode("utf-8", "replace")


def check(rc, what):
    """Raises RuntimeError (ValueError for a bad argument) for a failed call."""
    if rc == OK:
        return
    msg = last_error() or "error %d" % rc
    if rc == ERR_INVALID:
        raise ValueError("%s: %s" % (what, msg))
    raise RuntimeError("%s: %s" % (what, msg))
