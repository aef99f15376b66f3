#!/usr/bin/env python3
"""Allreduce through torch.distributed's gloo backend, measured the way
distbench measures.

A reference point for distbench's own strategies: NP processes on loopback
(torch.multiprocessing, tcp:// rendezvous on a free port), float32 sum
dist.all_reduce (in place, as torch does), warm-up, then timed iterations in
which every rank times its own call; rank 0 gathers the times and keeps, per
iteration, the slowest rank's. Rank 0 prints one distbench record per size on
stdout, prefixed with "distbench-record ", in distbench's record schema;
distbench computes the statistics from samples_us itself.

Run standalone:

    /usr/bin/python3 peers/gloo_allreduce.py --np 2 --sizes 4K,1M,16M --iters 20 --check

`distbench sweep --peers gloo` runs it for you. Needs Debian's python3-torch.
"""
import argparse
import datetime
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

PREFIX = "distbench-record "
MIN_BUDGET_ITERS = 3  # job.MinBudgetIters


def parse_size(s):
    s = s.strip().lower()
    for suffix, mult in (("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30),
                         ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("b", 1)):
        if s.endswith(suffix):
            return int(float(s[: -len(suffix)]) * mult)
    return int(s)


def measure(rank, size, nbytes, args):
    count = nbytes // 4
    buf = torch.zeros(count, dtype=torch.float32)
    wrong = -1
    if args.check:
        # Small integers reduce exactly in float32, so #wrong is exact.
        idx = torch.arange(count, dtype=torch.int64) % 13
        buf.copy_(idx + rank)
        dist.all_reduce(buf, op=dist.ReduceOp.SUM)
        expected = (size * idx + size * (size - 1) // 2).to(torch.float32)
        bad = torch.tensor([int((buf != expected).sum())], dtype=torch.int64)
        dist.all_reduce(bad, op=dist.ReduceOp.SUM)
        wrong = int(bad[0])
        buf.zero_()
    for _ in range(args.warmup):
        dist.all_reduce(buf, op=dist.ReduceOp.SUM)
    dist.barrier()
    iters, times = args.iters, []
    start = time.perf_counter()
    while len(times) < iters:
        t0 = time.perf_counter()
        dist.all_reduce(buf, op=dist.ReduceOp.SUM)
        times.append((time.perf_counter() - t0) * 1e6)
        if len(times) == MIN_BUDGET_ITERS and args.time_budget > 0 and iters > MIN_BUDGET_ITERS:
            # Every rank must run as many iterations: agree on the slowest
            # rank's time so far, as harness.budgetIters does.
            agreed = torch.tensor([sum(times)], dtype=torch.float64)
            dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
            per = float(agreed[0]) / len(times)
            if per > 0 and args.time_budget * 1e6 / per < iters:
                iters = max(int(args.time_budget * 1e6 / per), len(times))
    local = torch.tensor(times, dtype=torch.float64)
    everyone = [torch.empty_like(local) for _ in range(size)] if rank == 0 else None
    dist.gather(local, everyone, dst=0)
    if rank != 0:
        return
    slowest = torch.stack(everyone).max(dim=0).values
    rec = {
        "schema": 1, "kind": "collective", "peer": "gloo", "collective": "allreduce",
        "np": size, "bytes": count * 4, "count": count, "dtype": "float32", "op": "sum",
        "root": -1, "inplace": True, "iters": len(times), "warmup": args.warmup,
        "samples_us": [float(t) for t in slowest], "wrong": wrong,
        "elapsed_s": time.perf_counter() - start,
    }
    sys.stdout.write(PREFIX + json.dumps(rec) + "\n")
    sys.stdout.flush()


def worker(rank, args, port):
    # One thread per rank: the ranks share the machine's cores, as
    # distbench's worker processes do.
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=args.np, timeout=datetime.timedelta(seconds=args.timeout))
    for s in args.sizes.split(","):
        measure(rank, args.np, parse_size(s), args)
    dist.destroy_process_group()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--np", type=int, required=True, help="number of ranks (processes)")
    ap.add_argument("--sizes", required=True, help="comma-separated sizes in bytes (4096, 4K, 1MiB)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--time-budget", type=float, default=0, help="seconds per size; at least 3 iterations")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per operation")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.spawn(worker, args=(args, free_port()), nprocs=args.np, join=True)


if __name__ == "__main__":
    main()
