#!/usr/bin/env python3
"""torch.nn.DataParallel on one multi-GPU machine, the seeds' way, as the peer
distbench's `train --mode dp` is set beside.

One process; every step DataParallel replicates the model from the master
GPU (cuda:0) to the others, scatters the batch, runs the replicas in
threads, gathers the outputs on the master, where the loss is computed, and
backward reduces the gradients onto the master's parameters, where the
optimizer steps. The model is distbench's LeNet (the tutorial's net; see
torch_mnist_tutorial.py) on MNIST, read from the same IDX files (make data).
The recipe matches `distbench train --mode dp --model lenet`: global batch
--batch, SGD with --lr and --momentum.

    python3 peers/torch_dataparallel.py --gpus 4 --epochs 2 --batch 128 --lr 0.01 --momentum 0.5
    distbench train --mode dp --model lenet --dataset mnist --np 4 --epochs 2 --batch 128 --lr 0.01 --momentum 0.5

Prints one JSON line per epoch: test loss and accuracy, images/s, the
median step time, and wall time. With fewer than two CUDA GPUs there is
nothing to replicate onto: it prints one JSON line saying so ("skipped")
and exits 0. --cpu runs the same loop on the CPU, where DataParallel calls
the module directly (no replicas, no transfers): a check of this script,
not a measurement.
"""
import argparse, gzip, json, os, statistics, struct, sys, time

import numpy as np
import torch
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=0, help="GPUs to use (0: all)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--max-steps", type=int, default=0, help="steps per epoch (0: the whole epoch)")
    ap.add_argument("--batch", type=int, default=128, help="global batch, split across the GPUs")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", default="data/mnist")
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (checks the script; measures nothing)")
    args = ap.parse_args()

    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    gpus = args.gpus or have
    if not args.cpu and (have < 2 or gpus < 2 or gpus > have):
        print(json.dumps({"peer": "torch-dataparallel", "skipped":
                          f"DataParallel needs at least two CUDA GPUs to replicate onto; this machine has {have}"
                          + (f" (asked for {args.gpus})" if args.gpus else "")}), flush=True)
        return 0
    if not args.cpu and args.batch % gpus:
        print(f"torch_dataparallel: --batch {args.batch} must be a multiple of the {gpus} GPUs", file=sys.stderr)
        return 2

    torch.manual_seed(args.seed)
    device = torch.device("cpu" if args.cpu else "cuda:0")
    ids = None if args.cpu else list(range(gpus))
    xtr, ytr = load(args.data, "train")
    xte, yte = load(args.data, "test")
    train = torch.utils.data.TensorDataset(xtr, ytr)
    loader = torch.utils.data.DataLoader(train, batch_size=args.batch, shuffle=True, drop_last=True,
                                         generator=torch.Generator().manual_seed(args.seed))
    model = nn.DataParallel(Net().to(device), device_ids=ids)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    start = time.perf_counter()
    images = 0
    for epoch in range(1, args.epochs + 1):
        model.train()
        steps = []
        for k, (x, y) in enumerate(loader):
            if args.max_steps and k >= args.max_steps:
                break
            t0 = time.perf_counter()
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            opt.zero_grad()
            loss = F.nll_loss(model(x), y)
            loss.backward()
            opt.step()
            sync()
            steps.append((time.perf_counter() - t0) * 1e3)
            images += args.batch
        model.eval()
        with torch.no_grad():
            out = model(xte.to(device))
            test_loss = F.nll_loss(out, yte.to(device)).item()
            acc = (out.argmax(1).cpu() == yte).float().mean().item()
        wall = time.perf_counter() - start
        print(json.dumps({"peer": "torch-dataparallel", "model": "lenet", "dataset": "mnist",
                          "gpus": 0 if args.cpu else gpus, "device": device.type,
                          "epoch": epoch, "steps": len(steps), "loss": loss.item(), "test_loss": test_loss,
                          "test_acc": acc, "step_ms": statistics.median(steps) if steps else 0,
                          "images_per_s": images / wall, "wall_s": wall}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
