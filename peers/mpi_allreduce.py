#!/usr/bin/env python3
"""Allreduce through Open MPI (mpi4py), measured the way distbench measures.

A reference point for distbench's own strategies: the same sizes, float32
sum in place (MPI_IN_PLACE), warm-up, then timed iterations in which every
rank times its own call; rank 0 gathers the times and keeps, per iteration,
the slowest rank's. Rank 0 prints one distbench record per size on stdout,
prefixed with "distbench-record ", in distbench's record schema; distbench
computes the statistics (median, CI, busbw) from samples_us itself, so the
peers and the strategies are summarised by the same code.

Run standalone:

    mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self -n 2 \\
        /usr/bin/python3 peers/mpi_allreduce.py --sizes 4K,1M,16M --iters 20 --check

`distbench sweep --peers mpi` runs it for you. Needs Debian's openmpi-bin
and python3-mpi4py.
"""
import argparse
import json
import sys
import time

import numpy as np
from mpi4py import MPI

PREFIX = "distbench-record "
MIN_BUDGET_ITERS = 3  # job.MinBudgetIters


def parse_size(s):
    s = s.strip().lower()
    for suffix, mult in (("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30),
                         ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("b", 1)):
        if s.endswith(suffix):
            return int(float(s[: -len(suffix)]) * mult)
    return int(s)


def measure(comm, nbytes, args):
    rank, size = comm.Get_rank(), comm.Get_size()
    count = nbytes // 4
    buf = np.zeros(count, dtype=np.float32)
    wrong = -1
    if args.check:
        # Small integers reduce exactly in float32, so #wrong is exact.
        idx = np.arange(count, dtype=np.int64) % 13
        buf[:] = idx + rank
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
        expected = size * idx + size * (size - 1) // 2
        local = np.array([np.count_nonzero(buf != expected)], dtype=np.int64)
        total = np.zeros(1, dtype=np.int64)
        comm.Allreduce(local, total, op=MPI.SUM)
        wrong = int(total[0])
        buf[:] = 0
    for _ in range(args.warmup):
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    comm.Barrier()
    iters, times = args.iters, []
    start = time.perf_counter()
    while len(times) < iters:
        t0 = time.perf_counter()
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
        times.append((time.perf_counter() - t0) * 1e6)
        if len(times) == MIN_BUDGET_ITERS and args.time_budget > 0 and iters > MIN_BUDGET_ITERS:
            # Every rank must run as many iterations: agree on the slowest
            # rank's time so far, as harness.budgetIters does.
            agreed = np.zeros(1)
            comm.Allreduce(np.array([sum(times)]), agreed, op=MPI.MAX)
            per = agreed[0] / len(times)
            if per > 0 and args.time_budget * 1e6 / per < iters:
                iters = max(int(args.time_budget * 1e6 / per), len(times))
    local = np.array(times, dtype=np.float64)
    everyone = np.empty(size * len(times), dtype=np.float64) if rank == 0 else None
    comm.Gather(local, everyone, root=0)
    if rank != 0:
        return
    slowest = everyone.reshape(size, len(times)).max(axis=0)
    rec = {
        "schema": 1, "kind": "collective", "peer": "mpi", "collective": "allreduce",
        "np": size, "bytes": count * 4, "count": count, "dtype": "float32", "op": "sum",
        "root": -1, "inplace": True, "iters": len(times), "warmup": args.warmup,
        "samples_us": [float(t) for t in slowest], "wrong": wrong,
        "elapsed_s": time.perf_counter() - start,
    }
    sys.stdout.write(PREFIX + json.dumps(rec) + "\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", required=True, help="comma-separated sizes in bytes (4096, 4K, 1MiB)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--time-budget", type=float, default=0, help="seconds per size; at least 3 iterations")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    for s in args.sizes.split(","):
        measure(comm, parse_size(s), args)


if __name__ == "__main__":
    main()
