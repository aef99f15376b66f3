//go:build cgo

package telemetry

import (
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/distbench/distbench/internal/cuda"
	"github.com/distbench/distbench/results"
)

// Sampler holds NVML open and this host's GPUs. A nil *Sampler samples
// nothing.
type Sampler struct {
	lib  nvml.Interface
	devs []gpu
	from cuda.Candidate // the library asked for and where it was found
}

type gpu struct {
	index int
	name  string
	d     nvml.Device
}

// Open initialises NVML from the driver's libnvidia-ml.so.1, found where
// internal/cuda looks for the driver's libraries (DISTBENCH_NVML_LIB, the
// system's library path, the driver's directories such as
// /usr/local/nvidia/lib64). Without a driver or a GPU it returns nil and
// why, which is not an error: the caller goes on without telemetry.
func Open() (*Sampler, string) {
	why := "NVML: " + cuda.NVML.Sonames[0] + " not found in " + cuda.NVML.Places()
	for c := range (cuda.Finder{}).Candidates(cuda.NVML) {
		s, w, ret := openLib(nvml.New(nvml.WithLibraryPath(c.Path)))
		if s != nil {
			s.from = c
			return s, ""
		}
		if ret != nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, w
		}
		if c.From == cuda.EnvNVMLLib {
			why = w
		}
	}
	return nil, why
}

// OpenLib is Open with the NVML given (a mock, in tests).
func OpenLib(lib nvml.Interface) (*Sampler, string) {
	s, why, _ := openLib(lib)
	return s, why
}

// openLib is OpenLib, with NVML's answer to Init.
func openLib(lib nvml.Interface) (s *Sampler, why string, ret nvml.Return) {
	defer func() {
		// go-nvml panics on some libraries it cannot bind (an old or odd
		// libnvidia-ml); that is "no telemetry" too.
		if p := recover(); p != nil {
			s, why, ret = nil, fmt.Sprintf("NVML: %v", p), nvml.ERROR_UNKNOWN
		}
	}()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, "NVML: " + errString(lib, ret), ret
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS || n == 0 {
		lib.Shutdown()
		if ret != nvml.SUCCESS {
			return nil, "NVML: counting GPUs: " + errString(lib, ret), ret
		}
		return nil, "NVML: no GPU", nvml.SUCCESS
	}
	s = &Sampler{lib: lib}
	for i := range n {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		name, _ := d.GetName()
		s.devs = append(s.devs, gpu{index: i, name: name, d: d})
	}
	if len(s.devs) == 0 {
		lib.Shutdown()
		return nil, "NVML: no GPU could be opened", nvml.SUCCESS
	}
	return s, "", nvml.SUCCESS
}

func errString(lib nvml.Interface, ret nvml.Return) string {
	return fmt.Sprintf("%s (%d)", lib.ErrorString(ret), int32(ret))
}

// Close shuts NVML down.
func (s *Sampler) Close() {
	if s != nil {
		s.lib.Shutdown()
	}
}

// Run is one point's sampling, from Start to Stop.
type Run struct {
	s       *Sampler
	start   time.Time
	first   []nvlink // NVLink counters at the start
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples [][]sample // per GPU

	once   sync.Once
	result []results.GPUStats
}

// Start samples every GPU now, then every `every` until Stop, on a
// goroutine of its own; a nil Sampler gives a nil Run.
func (s *Sampler) Start(every time.Duration) *Run {
	if s == nil {
		return nil
	}
	r := &Run{s: s, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{}), samples: make([][]sample, len(s.devs))}
	r.first = s.nvlinks()
	r.take()
	go func() {
		defer close(r.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.take()
			}
		}
	}()
	return r
}

func (r *Run) take() {
	for i, g := range r.s.devs {
		smp := read(g.d)
		r.mu.Lock()
		r.samples[i] = append(r.samples[i], smp)
		r.mu.Unlock()
	}
}

// Stop takes a last sample and summarises the run per GPU. Calling it
// again (a deferred Stop after the one that took the figures) returns the
// same figures.
func (r *Run) Stop() []results.GPUStats {
	if r == nil {
		return nil
	}
	r.once.Do(func() {
		close(r.stop)
		<-r.done
		r.take()
		last := r.s.nvlinks()
		secs := time.Since(r.start).Seconds()
		r.result = make([]results.GPUStats, len(r.s.devs))
		for i, g := range r.s.devs {
			r.result[i] = summarise(g, r.samples[i], r.first[i], last[i], secs)
		}
	})
	return r.result
}
