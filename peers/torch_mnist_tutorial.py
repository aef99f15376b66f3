#!/usr/bin/env python3
"""The classic torch.distributed tutorial's synchronous SGD on MNIST, as the
peer distbench's `train --mode tutorial` is measured against.

Same net (conv 1→10 k5, max-pool, ReLU, conv 10→20 k5, dropout2d, max-pool,
ReLU, fc 320→50, ReLU, dropout, fc 50→10, log-softmax), same loop (each rank
trains on its DistributedSampler shard; after backward every parameter's
gradient is all_reduce'd and divided by the world size), gloo backend.
Reads the IDX files from the same data directory as distbench (make data).

    python3 peers/torch_mnist_tutorial.py --np 2 --epochs 2 --batch 128 --lr 0.01 --momentum 0.5

Prints one JSON line per epoch: test loss, accuracy, images/s, wall time.
"""
import argparse, gzip, json, os, struct, time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        magic = struct.unpack(">I", f.read(4))[0]
        dims = [struct.unpack(">I", f.read(4))[0] for _ in range(magic & 0xFF)]
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def load(data_dir, split):
    prefix = "train" if split == "train" else "t10k"
    x = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = (torch.from_numpy(x.astype(np.float32) / 255.0) - 0.1307) / 0.3081
    return x.unsqueeze(1), torch.from_numpy(y.astype(np.int64))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)


def average_gradients(model, world):
    for p in model.parameters():
        dist.all_reduce(p.grad.data, op=dist.ReduceOp.SUM)
        p.grad.data /= world


def run(rank, args):
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // args.np))
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=args.np)
    torch.manual_seed(args.seed)
    xtr, ytr = load(args.data, "train")
    xte, yte = load(args.data, "test")
    train = torch.utils.data.TensorDataset(xtr, ytr)
    sampler = torch.utils.data.distributed.DistributedSampler(train, num_replicas=args.np, rank=rank, seed=args.seed)
    loader = torch.utils.data.DataLoader(train, batch_size=args.batch // args.np, sampler=sampler, drop_last=True)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    start = time.perf_counter()
    images = 0
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch - 1)
        model.train()
        for x, y in loader:
            opt.zero_grad()
            loss = F.nll_loss(model(x), y)
            loss.backward()
            average_gradients(model, args.np)
            opt.step()
            images += args.batch
        model.eval()
        with torch.no_grad():
            out = model(xte)
            test_loss = F.nll_loss(out, yte).item()
            acc = (out.argmax(1) == yte).float().mean().item()
        if rank == 0:
            wall = time.perf_counter() - start
            print(json.dumps({"peer": "torch-gloo", "model": "lenet", "dataset": "mnist", "np": args.np,
                              "epoch": epoch, "loss": loss.item(), "test_loss": test_loss, "test_acc": acc,
                              "images_per_s": images / wall, "wall_s": wall}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", default="data/mnist")
    ap.add_argument("--port", type=int, default=29533)
    args = ap.parse_args()
    mp.spawn(run, args=(args,), nprocs=args.np)
