package harness

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/cuda"
)

// devicePoint is a point's buffers in device memory (--device cuda),
// beside the host buffers that the check fills and counts: the timed
// iterations run on dev alone, and a checked run copies host's inputs up
// before it and the results down after it, outside the timing.
type devicePoint struct {
	host, dev *instance
	frees     []func()
}

// onDevice mirrors inst's buffers in the memory of this rank's GPU
// (cuda.DeviceFor: its local rank mod the GPUs seen, as the nccl strategy
// places its communicator),
// keeping in-place forms in place: a buffer inside the other (allgather's
// in, a block of out) becomes the same range of the other's device memory.
func onDevice(inst *instance) (*devicePoint, error) {
	gpu, err := cuda.DeviceFor(inst.r)
	if err != nil {
		return nil, err
	}
	dp := &devicePoint{host: inst}
	dev := *inst
	dp.dev = &dev
	big, small := &dev.out, &dev.in
	if inst.in.Bytes() > inst.out.Bytes() {
		big, small = &dev.in, &dev.out
	}
	hbig, hsmall := *big, *small
	if hbig.Bytes() == 0 {
		return dp, nil // a barrier's, or a zero size's: nothing to place
	}
	mem, free, err := cuda.Alloc(gpu, hbig.Bytes())
	if err != nil {
		return nil, err
	}
	dp.frees = append(dp.frees, free)
	*big = collective.DeviceTensor(hbig.DType, mem)
	if off, ok := inside(hsmall.Data, hbig.Data); ok {
		*small = collective.DeviceTensor(hsmall.DType, mem.Slice(off, off+hsmall.Bytes()))
	} else {
		m, free, err := cuda.Alloc(gpu, hsmall.Bytes())
		if err != nil {
			dp.release()
			return nil, err
		}
		dp.frees = append(dp.frees, free)
		*small = collective.DeviceTensor(hsmall.DType, m)
	}
	// Known contents, not whatever cudaMalloc left, for the timed
	// iterations of a point that is not checked.
	if err := dp.up(); err != nil {
		dp.release()
		return nil, err
	}
	return dp, nil
}

// inside reports whether a lies within b, and at which byte offset.
func inside(a, b []byte) (int, bool) {
	if len(a) == 0 || len(b) == 0 {
		return 0, len(a) == 0 && len(b) == 0
	}
	p, q := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	if p >= q && p+uintptr(len(a)) <= q+uintptr(len(b)) {
		return int(p - q), true
	}
	return 0, false
}

// up copies the host buffers' inputs to the device, down the results back.
func (dp *devicePoint) up() error {
	return errors.Join(dp.dev.in.CopyFrom(dp.host.in), dp.dev.out.CopyFrom(dp.host.out))
}

func (dp *devicePoint) down() error {
	if err := dp.host.out.CopyFrom(dp.dev.out); err != nil {
		return fmt.Errorf("copying the result from the device: %w", err)
	}
	return nil
}

func (dp *devicePoint) release() {
	for _, f := range dp.frees {
		f()
	}
	dp.frees = nil
}

// checked runs one checked operation: on the host buffers themselves, or
// with their inputs copied up first and the results down after (dp nil is
// the host case).
func (dp *devicePoint) checked(run func() error) error {
	if dp == nil {
		return run()
	}
	if err := dp.up(); err != nil {
		return fmt.Errorf("copying the inputs to the device: %w", err)
	}
	if err := run(); err != nil {
		return err
	}
	return dp.down()
}
