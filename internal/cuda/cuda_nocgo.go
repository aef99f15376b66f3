//go:build !cgo

package cuda

import (
	"errors"

	"github.com/distbench/distbench/collective"
)

var errNoCgo = errors.New("cuda: this distbench was built without cgo (CGO_ENABLED=0), which loading the CUDA runtime needs; rebuild with cgo, or choose --device cpu")

// Available says why device memory cannot be had: never, without cgo.
func Available() error { return errNoCgo }

// DeviceCount is the number of GPUs.
func DeviceCount() (int, error) { return 0, errNoCgo }

// Alloc allocates n bytes on device ordinal.
func Alloc(ordinal, n int) (collective.DeviceMemory, func(), error) { return nil, nil, errNoCgo }
