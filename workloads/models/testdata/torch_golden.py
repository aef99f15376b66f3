# Regenerates torch_golden.json, the PyTorch reference that golden_test.go
# checks lenet and resnet20 against. Run with Debian's python3-torch:
#   python3 workloads/models/testdata/torch_golden.py > workloads/models/testdata/torch_golden.json
import json, math, torch, torch.nn as nn, torch.nn.functional as F

torch.set_default_dtype(torch.float64)  # the reference is exact; Go runs float32

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
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)

class Block(nn.Module):  # option A BasicBlock of the CIFAR ResNets
    def __init__(self, inp, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inp, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.pad = (stride != 1 or inp != planes)
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
                s = 2 if stage > 0 and b == 0 else 1
                blocks.append(Block(inp, planes, s))
                inp = planes
            layers.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3 = layers
        self.linear = nn.Linear(64, classes)
    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        out = F.avg_pool2d(out, out.size()[3]).view(out.size(0), -1)
        return self.linear(out)

def setparams(m):
    # The Go side fills its flat buffer with the same formula; the layouts
    # agree when registration orders do.
    off = 0
    with torch.no_grad():
        for p in m.parameters():
            n = p.numel()
            idx = torch.arange(off, off + n, dtype=torch.float64)
            p.copy_((0.2 * torch.sin(0.37 * idx + 0.1)).reshape(p.shape))
            off += n

def run(name, m, shape, labels, train, lossfn):
    setparams(m)
    m.train(train)
    n = 1
    for d in shape: n *= d
    x = torch.cos(0.05 * torch.arange(n, dtype=torch.float64)).reshape(shape)
    out = m(x)
    loss = lossfn(out, torch.tensor(labels))
    loss.backward()
    grads = []
    for pn, p in m.named_parameters():
        g = p.grad.flatten()
        grads.append({"name": pn, "sum": g.sum().item(), "abs": g.abs().sum().item(), "head": g[:3].tolist()})
    return {"model": name, "shape": list(shape), "labels": labels, "train": train,
            "loss": loss.item(), "out": out.flatten().tolist(), "grads": grads}

res = [
    run("lenet", LeNet(), (3, 1, 28, 28), [3, 0, 7], False, F.nll_loss),
    run("resnet20", ResNet20(3, 10), (2, 3, 8, 8), [1, 9], True, F.cross_entropy),
]
print(json.dumps(res, indent=1))
