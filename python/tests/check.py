#!/usr/bin/env python3
"""The backend's checks, run by python/torch_test.go under torchrun (or as
plain processes for --kill-rank). Each rank prints "PASS <what>" lines and
exits 0, or raises.

  conformance: every collective through distbench, against gloo's answer
    (or, where gloo has none, reduce_scatter's, one made from gloo's
    allgather), for every strategy in --strategies; then DDP of a small
    model for --steps steps through distbench beside the same DDP through
    gloo, whose parameters must end equal (to float tolerance), and the
    same for ZeroRedundancyOptimizer under DDP.
  --kill-rank R: DDP through distbench in which rank R kills itself
    (SIGKILL) in the middle of step 3; the others must fail with a
    RuntimeError naming rank R, which they write to $CHECK_ERRDIR/rank-N.
"""
import argparse
import os
import signal
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import distbench_torch  # noqa: E402

COUNTS = [0, 1, 2, 3, 5, 17, 1000]
DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64]
OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}


def data(rank, count, dtype, salt=0, small=False):
    """Exact values: integers that depend on rank and index (small ones
    where a product of them must stay exact)."""
    i = torch.arange(count, dtype=torch.int64)
    v = (i * 7 + rank * 13 + salt) % (5 if small else 1000) + (1 if small else 0)
    return v.to(dtype)


def same(what, got, want):
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        raise AssertionError("%s: got %s, want %s" % (what, got.tolist()[:8], want.tolist()[:8]))


def conformance(pg, gloo, name):
    r, n = dist.get_rank(pg), dist.get_world_size(pg)
    checked = 0
    for dt in DTYPES:
        for c in COUNTS:
            for opname, op in OPS.items():
                a = data(r, c, dt, small=opname == "prod")
                b = a.clone()
                dist.all_reduce(a, op=op, group=pg)
                dist.all_reduce(b, op=op, group=gloo)
                same("%s allreduce %s %s count %d" % (name, opname, dt, c), a, b)
                checked += 1
            for root in range(n):
                a, b = data(r, c, dt, root), data(r, c, dt, root)
                dist.broadcast(a, root, group=pg)
                dist.broadcast(b, root, group=gloo)
                same("%s broadcast root %d %s count %d" % (name, root, dt, c), a, b)
                a, b = data(r, c, dt, root), data(r, c, dt, root)
                dist.reduce(a, root, group=pg)
                dist.reduce(b, root, group=gloo)
                if r == root:
                    same("%s reduce root %d %s count %d" % (name, root, dt, c), a, b)
                checked += 2
            inp = data(r, c, dt)
            outs = [torch.empty(c, dtype=dt) for _ in range(n)]
            refs = [torch.empty(c, dtype=dt) for _ in range(n)]
            dist.all_gather(outs, inp, group=pg)
            if c:  # gloo's gathers of nothing die of SIGFPE (torch 1.13)
                dist.all_gather(refs, inp, group=gloo)
            for i in range(n):
                same("%s allgather %s count %d block %d" % (name, dt, c, i), outs[i], refs[i])
            flat = torch.empty(n * c, dtype=dt)
            dist.all_gather_into_tensor(flat, inp, group=pg)
            same("%s all_gather_into_tensor %s count %d" % (name, dt, c), flat, torch.cat(refs))
            # reduce-scatter: gloo has none in torch 1.13, so the answer is
            # made from gloo's allgather of every rank's input.
            big = data(r, n * c, dt)
            every = [torch.empty(n * c, dtype=dt) for _ in range(n)]
            if c:
                dist.all_gather(every, big, group=gloo)
            want = torch.stack(every).sum(0).to(dt)[r * c:(r + 1) * c]
            out = torch.empty(c, dtype=dt)
            dist.reduce_scatter(out, list(big.chunk(n) if c else [torch.empty(0, dtype=dt)] * n), group=pg)
            same("%s reduce_scatter %s count %d" % (name, dt, c), out, want)
            out = torch.empty(c, dtype=dt)
            dist.reduce_scatter_tensor(out, big, group=pg)
            same("%s reduce_scatter_tensor %s count %d" % (name, dt, c), out, want)
            a2a_in = data(r, n * c, dt, 3)
            got, ref = torch.empty(n * c, dtype=dt), torch.empty(n * c, dtype=dt)
            dist.all_to_all_single(got, a2a_in, group=pg)
            if c:
                dist.all_to_all_single(ref, a2a_in, group=gloo)
            same("%s all_to_all_single %s count %d" % (name, dt, c), got, ref)
            for root in range(n):
                g = [torch.empty(c, dtype=dt) for _ in range(n)] if r == root else None
                dist.gather(inp, g, dst=root, group=pg)
                if r == root:
                    for i in range(n):
                        same("%s gather root %d block %d" % (name, root, i), g[i], refs[i])
                sc = [data(i, c, dt, root) for i in range(n)] if r == root else None
                out = torch.empty(c, dtype=dt)
                dist.scatter(out, sc, src=root, group=pg)
                same("%s scatter root %d %s count %d" % (name, root, dt, c), out, data(r, c, dt, root))
            checked += 6 + 2 * n
        # send and recv around the ring, both ways round.
        for c in (1, 1000):
            nxt, prv = (r + 1) % n, (r - 1) % n
            t = data(r, c, dt, 5)
            got = torch.empty(c, dtype=dt)
            if r % 2 == 0:
                dist.send(t, nxt, group=pg)  # groups here span the world: group rank = global rank
                dist.recv(got, prv, group=pg)
            else:
                dist.recv(got, prv, group=pg)
                dist.send(t, nxt, group=pg)
            same("%s send/recv %s count %d" % (name, dt, c), got, data(prv, c, dt, 5))
            checked += 1
    # avg: gloo has none; it is sum / n.
    a = data(r, 17, torch.float32)
    b = a.clone()
    dist.all_reduce(a, op=dist.ReduceOp.AVG, group=pg)
    dist.all_reduce(b, group=gloo)
    if not torch.allclose(a, b / n):
        raise AssertionError("%s allreduce avg: got %s, want %s" % (name, a.tolist()[:4], (b / n).tolist()[:4]))
    # non-contiguous tensors are staged and copied back.
    m = data(r, 40, torch.float32).view(8, 5).t()
    m2 = m.clone()
    dist.all_reduce(m, group=pg)
    dist.all_reduce(m2, group=gloo)
    same("%s allreduce non-contiguous" % name, m, m2)
    dist.barrier(group=pg)
    # asynchronous forms: several in flight, completed in order.
    ts = [data(r, 100, torch.float32, k) for k in range(4)]
    refs = [t.clone() for t in ts]
    works = [dist.all_reduce(t, group=pg, async_op=True) for t in ts]
    for t in refs:
        dist.all_reduce(t, group=gloo)
    for w, t, ref in zip(works, ts, refs):
        w.wait()
        same("%s async allreduce" % name, t, ref)
    checked += 4
    return checked


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.body(x)


def ddp_pair(pg, gloo, name, steps):
    """DDP through pg beside DDP through gloo, from the same start on the
    same batches; the parameters must end equal to float tolerance."""
    r = dist.get_rank()
    torch.manual_seed(1)
    base = Net()
    models = {}
    for label, group in (("distbench", pg), ("gloo", gloo)):
        m = Net()
        m.load_state_dict(base.state_dict())
        # small buckets, so that several allreduces overlap the backward pass
        models[label] = (DDP(m, process_group=group, bucket_cap_mb=0.01), torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9))
    for step in range(steps):
        g = torch.Generator().manual_seed(1000 * step + r)
        x, y = torch.randn(16, 10, generator=g), torch.randint(0, 4, (16,), generator=g)
        for label, (model, opt) in models.items():
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        distbench_torch.step()  # labels the default group's records with the step
    pd = list(models["distbench"][0].parameters())
    pg_ = list(models["gloo"][0].parameters())
    worst = max((a - b).abs().max().item() for a, b in zip(pd, pg_))
    if worst > 1e-5:
        raise AssertionError("%s DDP: parameters differ from gloo's by %g after %d steps" % (name, worst, steps))
    return worst


def zero_pair(pg, gloo, name, steps):
    """ZeroRedundancyOptimizer under DDP through pg beside the same through
    gloo: each rank steps its shard and broadcasts it, so the parameters
    must end equal."""
    from torch.distributed.optim import ZeroRedundancyOptimizer
    r = dist.get_rank()
    torch.manual_seed(2)
    base = Net()
    runs = {}
    for label, group in (("distbench", pg), ("gloo", gloo)):
        m = Net()
        m.load_state_dict(base.state_dict())
        opt = ZeroRedundancyOptimizer(m.parameters(), optimizer_class=torch.optim.SGD, process_group=group, lr=0.05)
        runs[label] = (DDP(m, process_group=group), opt)
    for step in range(steps):
        g = torch.Generator().manual_seed(77 * step + r)
        x, y = torch.randn(16, 10, generator=g), torch.randint(0, 4, (16,), generator=g)
        for label, (model, opt) in runs.items():
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    worst = max((a - b).abs().max().item() for a, b in zip(runs["distbench"][0].parameters(), runs["gloo"][0].parameters()))
    if worst > 1e-5:
        raise AssertionError("%s ZeroRedundancyOptimizer: parameters differ from gloo's by %g" % (name, worst))
    return worst


def run_conformance(args):
    default = args.default
    if default == "distbench":
        dist.init_process_group("distbench", pg_options=distbench_torch.Options(strategy=args.strategies[0]))
        gloo = dist.new_group(backend="gloo")
        groups = [(args.strategies[0], None)]
        rest = args.strategies[1:]
    else:
        dist.init_process_group("gloo")
        gloo = None
        groups, rest = [], args.strategies
    for s in rest:
        groups.append((s, dist.new_group(backend="distbench", pg_options=distbench_torch.Options(strategy=s))))
    r = dist.get_rank()
    for name, pg in groups:
        n = conformance(pg, gloo, name)
        print("PASS rank %d %s conformance: %d checks" % (r, name, n), flush=True)
        worst = ddp_pair(pg, gloo, name, args.steps)
        print("PASS rank %d %s DDP %d steps, np %d: largest difference from gloo %g" % (r, name, args.steps, dist.get_world_size(), worst), flush=True)
        worst = zero_pair(pg, gloo, name, 5)
        print("PASS rank %d %s ZeroRedundancyOptimizer 5 steps: largest difference from gloo %g" % (r, name, worst), flush=True)
    dist.destroy_process_group()


def run_kill(args):
    dist.init_process_group("distbench")
    r = dist.get_rank()
    torch.manual_seed(1)
    model = DDP(Net(), bucket_cap_mb=0.01)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    try:
        for step in range(1000):
            x, y = torch.randn(16, 10), torch.randint(0, 4, (16,))
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            if step == 3 and r == args.kill_rank:
                os.kill(os.getpid(), signal.SIGKILL)
            loss.backward()
            opt.step()
    except RuntimeError as e:
        with open(os.path.join(os.environ["CHECK_ERRDIR"], "rank-%d" % r), "w") as f:
            f.write(str(e))
        print("rank %d failed as it should: %s" % (r, e), file=sys.stderr, flush=True)
        os._exit(3)
    print("rank %d: ran 1000 steps without noticing rank %d die" % (r, args.kill_rank), file=sys.stderr)
    sys.exit(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--strategies", default="ring,tree,ps")
    p.add_argument("--default", choices=["gloo", "distbench"], default="gloo")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--kill-rank", type=int, default=-1)
    args = p.parse_args()
    args.strategies = args.strategies.split(",")
    if args.kill_rank >= 0:
        run_kill(args)
    else:
        run_conformance(args)


if __name__ == "__main__":
    main()
