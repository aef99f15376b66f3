#!/usr/bin/env python3
"""PyTorch's side of bench/train-vs-torch.sh: the nets distbench trains
(lenet, resnet20 as in workloads/models/testdata/torch_golden.py), trained
with DDP over gloo, each rank on its share of the cores (as distbench's
workers: cores / np threads), on the same IDX files, timing each
step as distbench does (global batch / step seconds, the first step left
out). Prints one JSON line: model, np, batch, steps, median images/s.

    /usr/bin/python3 bench/torch_train.py --model resnet20 --np 2 --batch 128 --steps 20
"""
import argparse, gzip, json, os, statistics, struct, time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def read_idx(path):
    with gzip.open(path, "rb") as f:
        magic = struct.unpack(">I", f.read(4))[0]
        dims = [struct.unpack(">I", f.read(4))[0] for _ in range(magic & 0xFF)]
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


class LeNet(nn.Module):
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
        x = F.relu(self.fc1(x.view(-1, 320)))
        x = F.dropout(x, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)


class Block(nn.Module):  # option A BasicBlock of the CIFAR ResNets
    def __init__(self, inp, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inp, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.pad = stride != 1 or inp != planes
        self.planes = planes

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        sc = x
        if self.pad:
            p = self.planes // 4
            sc = F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, p, p), "constant", 0)
        return F.relu(out + sc)


class ResNet20(nn.Module):
    def __init__(self, c, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(c, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        layers, inp = [], 16
        for stage, planes in enumerate([16, 32, 64]):
            blocks = []
            for b in range(3):
                blocks.append(Block(inp, planes, 2 if stage > 0 and b == 0 else 1))
                inp = planes
            layers.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3 = layers
        self.linear = nn.Linear(64, classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        out = F.avg_pool2d(out, out.size()[3]).view(out.size(0), -1)
        return self.linear(out)


def worker(rank, a):
    torch.set_num_threads(max(1, os.cpu_count() // a.np))
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(a.port)
    dist.init_process_group("gloo", rank=rank, world_size=a.np)
    torch.manual_seed(a.seed)
    x = read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)
    y = torch.from_numpy(y.astype(np.int64))
    net = LeNet() if a.model == "lenet" else ResNet20(1, 10)
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    lossfn = F.nll_loss if a.model == "lenet" else F.cross_entropy
    per = a.batch // a.np
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(a.seed))
    rates = []
    for step in range(a.steps):
        idx = perm[(step * a.batch + rank * per):(step * a.batch + (rank + 1) * per)]
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = lossfn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        dist.barrier()  # the step ends when the slowest rank's does
        dt = time.perf_counter() - t0
        if step > 0:
            rates.append(a.batch / dt)
    if rank == 0:
        print(json.dumps({"tool": "torch", "model": a.model, "np": a.np, "batch": a.batch, "steps": a.steps,
                          "images_per_s": statistics.median(rates), "torch": torch.__version__}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet20", choices=["lenet", "resnet20"])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", default="data/fashion-mnist")
    ap.add_argument("--port", type=int, default=29541)
    a = ap.parse_args()
    mp.spawn(worker, args=(a,), nprocs=a.np, join=True)
