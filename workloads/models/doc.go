// Package models builds distbench's workloads, real networks from the
// papers and tutorials that distributed training is measured on, by name:
//
//	mlp       flatten, two hidden ReLU layers (512, 256), linear
//	lenet     PyTorch's MNIST / distributed-SGD tutorial net (21,840 parameters)
//	resnet20  the CIFAR ResNet of He et al. (≈0.27M parameters)
//	resnet18  torchvision's ResNet-18 (11,689,512 parameters at 1000 classes)
//	resnet50  torchvision's ResNet-50 (25,557,032 parameters at 1000 classes)
//
// Models register themselves from init, as database/sql drivers do, and
// [New] builds one for an input shape and class count with a seed:
//
//	net, err := models.New("lenet", models.MNIST, 10, 1)
//	opt := &nn.SGD{LR: 0.01, Momentum: 0.5}
//	net.ZeroGrad()
//	loss, _ := net.ForwardBackward(x, labels)
//	opt.Step(net.Data, net.Grad)
//
// # Gradient profiles
//
// [Profile] lists a model's gradient tensors in the order backward makes
// them ready, and [GradProfile.Buckets] groups them as PyTorch's
// DistributedDataParallel does (first bucket 1 MiB, then bucket_cap_mb, 25
// by default), so a benchmark can replay "one training step's
// communication of ResNet-50" as a list of allreduce sizes without running
// the model.
package models
