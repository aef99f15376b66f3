package nccl

import (
	"context"
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/cuda"
)

// Name is the strategy's registered name.
const Name = "nccl"

// The environment variables that name the libraries to load instead of
// searching for them (a stand-in, a NCCL build of one's own); internal/cuda
// says where the search looks.
const (
	EnvNCCLLib   = cuda.EnvNCCLLib
	EnvCUDARTLib = cuda.EnvCUDARTLib
)

type strategy struct{}

var (
	_ collective.Strategy     = strategy{}
	_ collective.Describer    = strategy{}
	_ collective.Availability = strategy{}
)

func init() { collective.Register(Name, strategy{}) }

func (strategy) Description() string {
	return "NVIDIA NCCL, loaded at run time (libnccl.so.2 and the CUDA runtime); host tensors are staged through device memory"
}

// Available loads the libraries and asks the runtime for a device, so that
// a machine without them is told why before any process starts.
func (strategy) Available() error {
	if !haveCgo {
		return fmt.Errorf("%s: this distbench was built without cgo (CGO_ENABLED=0), which loading NCCL needs; rebuild with cgo, or choose --strategy ring", Name)
	}
	if err := load(); err != nil {
		return err
	}
	_, err := deviceCount()
	return err
}

func (s strategy) New(ctx context.Context, cfg collective.Config) (collective.Comm, error) {
	if err := s.Available(); err != nil {
		return nil, err
	}
	return newComm(ctx, cfg)
}

// loadError is a library that cannot be opened.
type loadError struct {
	what, where, detail, hint string
}

func (e *loadError) Error() string {
	in := ""
	if e.where != "" {
		in = " in " + e.where
	}
	return fmt.Sprintf("%s: %s not found%s (%s, or choose --strategy ring)", Name, e.what, in, e.hint)
}

// Detail is the dynamic loader's own message.
func (e *loadError) Detail() string { return e.detail }
