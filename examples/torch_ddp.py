#!/usr/bin/env python3
"""DDP training of torchvision's ResNet-18 under torchrun, through gloo or
through distbench (python/distbench_torch), timing each step the same way
for both: its wall time, the communication time (how long the backend was
busy with the step's gradient buckets, overlapped or not) and the exposed
part (from the last bucket's issue, when the backward pass ends, to the
completion of every bucket). Rank 0 prints one JSON line.

    make capi
    DISTBENCH_STRATEGY=ring python3 -m torch.distributed.run --standalone \\
        --nproc_per_node 2 --redirects 2 --tee 2 \\
        examples/torch_ddp.py --backend distbench --steps 20

    # the same through gloo
    python3 -m torch.distributed.run --standalone --nproc_per_node 2 \\
        --redirects 2 --tee 2 examples/torch_ddp.py --backend gloo --steps 20

(--redirects 2 --tee 2: Debian's torch 1.13 on Python 3.11 cannot parse
torchrun's defaults for them.) --data fashion-mnist reads Debian's
dataset-fashion-mnist (apt-get install dataset-fashion-mnist), 28×28
grey images padded to 32×32 and repeated over three channels; the default,
fake, is random images as torchvision's FakeData makes, generated in
memory so that the input pipeline costs nothing. With DISTBENCH_OUT=DIR
the distbench backend also records every operation for
`distbench report DIR`.
"""
import argparse
import gzip
import json
import os
import statistics
import struct
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def fashion_mnist(root="/usr/share/datasets/fashion-mnist"):
    def idx(name):
        with gzip.open(os.path.join(root, name), "rb") as f:
            magic = struct.unpack(">I", f.read(4))[0]
            dims = [struct.unpack(">I", f.read(4))[0] for _ in range(magic & 0xFF)]
            return torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).reshape(dims)
    x = idx("train-images-idx3-ubyte.gz").float().div_(255).sub_(0.2860).div_(0.3530)
    x = nn.functional.pad(x, (2, 2, 2, 2)).unsqueeze(1).expand(-1, 3, -1, -1)
    return x, idx("train-labels-idx1-ubyte.gz").long()


class CommTimer:
    """A DDP communication hook (allreduce of the bucket, averaged, as DDP's
    default) that times each step's buckets: the backend is busy with a
    bucket from its issue, or from the previous bucket's completion if
    later, until its own completion."""

    def __init__(self, group):
        self.group = group
        self.world = dist.get_world_size(group)
        self.reset()

    def reset(self):
        self.issued, self.ended = [], []

    def hook(self, state, bucket):
        t = bucket.buffer().div_(self.world)
        i = len(self.issued)
        self.issued.append(time.perf_counter())
        self.ended.append(None)
        fut = dist.all_reduce(t, group=self.group, async_op=True).get_future()

        def done(f):
            self.ended[i] = time.perf_counter()
            return f.value()[0]
        return fut.then(done)

    def step(self):
        """(busy seconds, exposed seconds) of the step just finished."""
        busy, prev = 0.0, 0.0
        for a, b in zip(self.issued, self.ended):
            busy += b - max(a, prev)
            prev = b
        exposed = max(self.ended) - self.issued[-1] if self.issued else 0.0
        self.reset()
        return busy, exposed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=["gloo", "distbench"], default="distbench")
    p.add_argument("--model", default="resnet18", help="a torchvision.models name")
    p.add_argument("--data", choices=["fake", "fashion-mnist"], default="fake")
    p.add_argument("--batch", type=int, default=32, help="per rank")
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--bucket-cap-mb", type=float, default=25, help="DDP's bucket size (its default: 25)")
    p.add_argument("--threads", type=int, default=0, help="torch threads per rank; 0: the machine's cores / local ranks")
    p.add_argument("--lr", type=float, default=0.01)
    args = p.parse_args()

    if args.backend == "distbench":
        import distbench_torch  # noqa: F401  registers the backend
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // local))
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(num_classes=10)
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)
    timer = CommTimer(None)
    ddp.register_comm_hook(None, timer.hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)

    if args.data == "fashion-mnist":
        xs, ys = fashion_mnist()
    g = torch.Generator().manual_seed(rank)
    steps, comm, exposed, losses = [], [], [], []
    for step in range(args.warmup + args.steps):
        if args.data == "fake":
            x, y = torch.randn(args.batch, 3, 32, 32, generator=g), torch.randint(0, 10, (args.batch,), generator=g)
        else:
            i = torch.randint(0, len(ys), (args.batch,), generator=g)
            x, y = xs[i], ys[i]
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        busy, exp = timer.step()
        if args.backend == "distbench":
            distbench_torch.step(step + 1)
        if step >= args.warmup:
            steps.append(t1 - t0)
            comm.append(busy)
            exposed.append(exp)
            losses.append(loss.item())

    # Every rank's medians, so that rank 0 reports the slowest.
    mine = torch.tensor([statistics.median(steps), statistics.median(comm), statistics.median(exposed)], dtype=torch.float64)
    every = [torch.zeros(3, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(every, mine)
    if rank == 0:
        worst = torch.stack(every).max(0).values.tolist()
        strategy = os.environ.get("DISTBENCH_STRATEGY", "ring") if args.backend == "distbench" else ""
        print(json.dumps({
            "backend": args.backend, "strategy": strategy, "np": world, "model": args.model, "data": args.data,
            "batch_per_rank": args.batch, "steps": args.steps, "bucket_cap_mb": args.bucket_cap_mb,
            "step_ms": round(worst[0] * 1e3, 2), "comm_ms": round(worst[1] * 1e3, 2), "exposed_ms": round(worst[2] * 1e3, 2),
            "images_per_s": round(args.batch * world / worst[0], 1), "final_loss": round(losses[-1], 4),
        }), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
