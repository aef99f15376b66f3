//go:build !cgo

package cuda

import (
	"errors"
	"unsafe"

	"github.com/distbench/distbench/collective"
)

var errNoCgo = errors.New("cuda: this distbench was built without cgo (CGO_ENABLED=0), which loading the CUDA runtime needs; rebuild with cgo, or choose --device cpu")

// Available says why device memory cannot be had: never, without cgo.
func Available() error { return errNoCgo }

// DeviceCount is the number of GPUs.
func DeviceCount() (int, error) { return 0, errNoCgo }

// Alloc allocates n bytes on device ordinal.
func Alloc(ordinal, n int) (collective.DeviceMemory, func(), error) { return nil, nil, errNoCgo }

// Loaded is a library this process loaded; without cgo, none.
type Loaded struct {
	Library, Path, From string
}

// Handle is the library's dlopen handle.
func (l Loaded) Handle() unsafe.Pointer { return nil }

// Runtime is the CUDA runtime this process uses.
func Runtime() (Loaded, error) { return Loaded{}, errNoCgo }

// DriverLibrary is the driver's library, never found without cgo.
func DriverLibrary() Loaded { return Loaded{Library: Driver.Name} }

// Versions are the runtime's and driver's version codes.
func Versions() (int, int, error) { return -1, -1, errNoCgo }

// DeviceInfo is what the runtime tells of one GPU.
type DeviceInfo struct {
	Ordinal               int
	PCIBusID              string
	Major, Minor, SMs     int
	FreeBytes, TotalBytes uint64
	Err                   string
}

// Devices describes every GPU the runtime sees.
func Devices() ([]DeviceInfo, error) { return nil, errNoCgo }

// Open loads the first of lib's candidates: none, without cgo.
func Open(f Finder, lib Library, global bool, accept func(Loaded) error) (Loaded, error) {
	return Loaded{}, errNoCgo
}
