// Package nn is a small neural-network engine in pure Go, enough to train
// the networks distributed-training papers measure (LeNet, ResNets) on CPU
// and so produce real gradients for distbench's collectives.
//
// Layers: [Linear], [Conv2d] (stride, padding; im2col and a float32 GEMM),
// [MaxPool2d], [AvgPool2d], [GlobalAvgPool], [BatchNorm2d], [ReLU],
// [Dropout] and channel dropout, [Flatten], [LogSoftmax], [Sequential] and
// the ResNet blocks ([NewBasicBlock], [NewBottleneck]); losses [NLLLoss] and
// [CrossEntropyLoss]; the optimizer [SGD] (momentum, Nesterov, weight
// decay) with learning-rate [Schedule]s and [LinearScaling]. Layers follow
// torch's definitions and initialisation (see [InitKind]) so that results
// are comparable with PyTorch's; the models package's tests check outputs
// and gradients against PyTorch.
//
// # Flat buffers and gradient-ready order
//
// [NewNet] lays out every parameter of a network in one flat float32
// buffer, Net.Data, and every gradient in another, Net.Grad; each [Param]'s
// Data and Grad are views into them. Parameters are laid out in
// registration (forward) order, and Backward finishes their gradients in
// exactly the reverse order, announcing each through the Net.OnGradReady
// hook. So any run of parameters consecutive in gradient-ready order — a
// DDP bucket — is one contiguous slice of Net.Grad, and an allreduce can
// start on it while backward continues. [AssignBuckets] groups parameters
// as PyTorch's DistributedDataParallel does.
//
// # Usage
//
// One data-parallel training step, the shape a training loop takes:
//
//	net.ZeroGrad()
//	net.OnGradReady(func(p *nn.Param) {
//		// p.Grad is final; when p completes a bucket, start an async
//		// allreduce of net.Grad[b.Start:b.End].
//	})
//	loss, correct := net.ForwardBackward(x, labels)
//	// wait for the allreduces, divide by the world size
//	opt.LR = sched.LR(step)
//	opt.Step(net.Data, net.Grad)
//
// # Performance
//
// Convolutions split the batch across Ctx.Workers goroutines (GOMAXPROCS by
// default), each running serial GEMMs on its own scratch, and keep buffers
// from step to step: a step at a fixed batch size allocates almost nothing.
// Set Workers to 1 when several ranks share a machine's cores. Results are
// bit-for-bit reproducible for a fixed Workers.
//
// The GEMM is BLIS's design in Go assembly where the CPU has AVX2 and FMA
// (sgemm.go: packed panels, a 6×16 register tile on AVX-512 or AVX2, Zen's
// cache blocking; sdot.go: A·Bᵀ as 4×3 tiles of AVX2 dot products,
// unpacked), and gonum's elsewhere (build tag purego forces it). Each element of C is summed in
// an order set by k alone, so neither splitting C between goroutines nor
// scheduling changes its bits. Measure with
//
//	go test -run '^$' -bench GemmSerial ./workloads/nn
//	bench/train-vs-torch.sh    # images/s beside PyTorch, GFLOP/s vs peak
package nn
