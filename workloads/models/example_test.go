package models_test

import (
	"fmt"

	"github.com/distbench/distbench/workloads/models"
)

func ExampleNew() {
	net, err := models.New("lenet", models.MNIST, 10, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(net.NumParams(), "parameters in", len(net.Param), "tensors")
	_, err = models.New("vgg16", models.MNIST, 10, 1)
	fmt.Println(err)
	// Output:
	// 21840 parameters in 8 tensors
	// models: unknown model "vgg16" (accepted: lenet, mlp, resnet18, resnet20, resnet50)
}

// One training step's gradient communication of ResNet-50 under PyTorch
// DDP's default buckets, as a benchmark would replay it.
func ExampleGradProfile_BucketBytes() {
	p, err := models.Profile("resnet50", models.ImageNet, 1000)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d tensors, %.1f MB\n", len(p.Tensors), float64(p.Bytes)/1e6)
	for _, b := range p.BucketBytes(25) {
		fmt.Printf("%.2f MiB\n", float64(b)/(1<<20))
	}
	// Output:
	// 161 tensors, 102.2 MB
	// 7.82 MiB
	// 30.04 MiB
	// 25.04 MiB
	// 25.32 MiB
	// 9.27 MiB
}
