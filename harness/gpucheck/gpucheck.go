// Package gpucheck says what distbench finds of a machine's GPUs: which
// CUDA runtime, driver, NCCL and NVML it loaded and from where, their
// versions, the GPUs the runtime and NVML see, and the GPU each local rank
// would use; one line for each thing missing. `distbench gpu-check` prints
// it, and `distbench doctor` can call [Check] as one of its checks.
//
// It loads the libraries as a run would (internal/cuda's search, the nccl
// strategy's binding, telemetry's NVML), so that what it says is what a
// run gets. Tested against the nccl strategy's stand-in libraries and with
// none at all; its text for a real H100 is a golden file made from the
// figures the lent machines' H100 showed, until one prints its own.
package gpucheck

import (
	"fmt"
	"os"
	"strings"

	"github.com/distbench/distbench/internal/cuda"
	"github.com/distbench/distbench/internal/telemetry"
	"github.com/distbench/distbench/strategies/nccl"
)

// Report is what Check found.
type Report struct {
	Runtime Lib `json:"cuda_runtime"`
	Driver  Lib `json:"cuda_driver"`
	NCCL    Lib `json:"nccl"`
	NVML    Lib `json:"nvml"`
	// DriverVersion is the NVIDIA driver's own ("580.159.04"), from NVML.
	DriverVersion string `json:"driver_version,omitempty"`
	// VisibleDevices is CUDA_VISIBLE_DEVICES, "" where unset.
	VisibleDevices string `json:"cuda_visible_devices,omitempty"`
	GPUs           []GPU  `json:"gpus"`
	// Placement is the GPU this process would use as the rank its
	// launcher's variables name (none where none is set).
	Placement *cuda.Placement `json:"placement,omitempty"`
	// Problems are the things missing, one line each; none where a GPU
	// run can go ahead with every library.
	Problems []string `json:"problems"`
}

// Lib is one library: the file loaded, where the search found it, its
// version, or why it was not loaded.
type Lib struct {
	Name    string `json:"name"`
	Path    string `json:"path,omitempty"`
	From    string `json:"from,omitempty"`
	Version string `json:"version,omitempty"`
	Err     string `json:"error,omitempty"`
}

// GPU is one device: the runtime's view (ordinal, compute capability,
// memory) joined with NVML's (name, UUID) by PCI bus id.
type GPU struct {
	Ordinal    int    `json:"ordinal"`
	Name       string `json:"name,omitempty"`
	UUID       string `json:"uuid,omitempty"`
	PCIBusID   string `json:"pci_bus_id,omitempty"`
	Compute    string `json:"compute_capability,omitempty"` // "9.0"
	SMs        int    `json:"sms,omitempty"`
	FreeBytes  uint64 `json:"free_bytes,omitempty"`
	TotalBytes uint64 `json:"total_bytes,omitempty"`
	Err        string `json:"error,omitempty"`
}

// OK is whether nothing is missing.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Check loads what a GPU run loads and reports it. It takes a second or
// so on a GPU (a context on each), and waits on nothing else.
func Check() *Report {
	r := &Report{VisibleDevices: os.Getenv("CUDA_VISIBLE_DEVICES")}
	r.Runtime = Lib{Name: cuda.CUDART.Name}
	rt, err := cuda.Runtime()
	if err != nil {
		r.Runtime.Err = err.Error()
		r.Problems = append(r.Problems, err.Error())
	} else {
		r.Runtime.Path, r.Runtime.From = rt.Path, rt.From
	}
	r.Driver = Lib{Name: cuda.Driver.Name}
	if d := cuda.DriverLibrary(); d.Path != "" {
		r.Driver.Path, r.Driver.From = d.Path, d.From
	} else if p := mapped("libcuda.so"); p != "" {
		r.Driver.Path, r.Driver.From = p, "loaded by the runtime"
	}
	if err == nil {
		rv, dv, _ := cuda.Versions()
		r.Runtime.Version, r.Driver.Version = cudaVersion(rv), cudaVersion(dv)
		r.gpus()
	}
	if r.Driver.Path == "" && r.Runtime.Err == "" {
		r.Driver.Err = cuda.Driver.Sonames[0] + " not found in " + cuda.Driver.Places() + " (no NVIDIA driver)"
	}

	r.NCCL = Lib{Name: cuda.NCCL.Name}
	if r.Runtime.Err != "" {
		// NCCL cannot be bound without a runtime; say at least whether
		// and where it is.
		if lib, err := cuda.Open(cuda.Finder{}, cuda.NCCL, false, nil); err != nil {
			r.NCCL.Err = "nccl: " + err.Error()
			r.Problems = append(r.Problems, r.NCCL.Err)
		} else {
			r.NCCL.Path, r.NCCL.From, r.NCCL.Version = lib.Path, lib.From, "version unknown without a CUDA runtime"
		}
	} else if lib, v, err := nccl.Library(); err != nil {
		r.NCCL.Err = err.Error()
		r.Problems = append(r.Problems, err.Error())
	} else {
		r.NCCL.Path, r.NCCL.From, r.NCCL.Version = lib.Path, lib.From, ncclVersion(v)
	}

	r.NVML = Lib{Name: cuda.NVML.Name}
	s, why := telemetry.Open()
	if s == nil {
		r.NVML.Err = "telemetry: " + why + " (sweeps run without GPU telemetry)"
		r.Problems = append(r.Problems, r.NVML.Err)
	} else {
		info := s.Describe()
		s.Close()
		r.NVML.Path, r.NVML.From, r.NVML.Version = info.Library, info.From, info.NVMLVersion
		if !strings.Contains(r.NVML.Path, "/") {
			if p := mapped("libnvidia-ml.so"); p != "" {
				r.NVML.Path = p
			}
		}
		r.DriverVersion = info.DriverVersion
		r.join(info.GPUs)
	}
	if p, ok := placement(len(r.GPUs)); ok {
		r.Placement = &p
	}
	return r
}

// gpus fills the runtime's view of the devices.
func (r *Report) gpus() {
	devs, err := cuda.Devices()
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
		return
	}
	for _, d := range devs {
		g := GPU{Ordinal: d.Ordinal, PCIBusID: strings.ToUpper(d.PCIBusID), SMs: max(d.SMs, 0),
			FreeBytes: d.FreeBytes, TotalBytes: d.TotalBytes, Err: d.Err}
		if d.Major >= 0 && d.Minor >= 0 {
			g.Compute = fmt.Sprintf("%d.%d", d.Major, d.Minor)
		}
		if d.Err != "" {
			r.Problems = append(r.Problems, fmt.Sprintf("GPU %d: %s", d.Ordinal, d.Err))
		}
		r.GPUs = append(r.GPUs, g)
	}
}

// join names the runtime's devices after NVML's of the same bus id. NVML
// numbers every GPU of the host; the runtime only those
// CUDA_VISIBLE_DEVICES shows, so only the bus id matches them.
func (r *Report) join(gpus []telemetry.GPUInfo) {
	for i := range r.GPUs {
		for _, n := range gpus {
			if n.PCIBusID != "" && strings.EqualFold(n.PCIBusID, r.GPUs[i].PCIBusID) {
				r.GPUs[i].Name, r.GPUs[i].UUID = n.Name, n.UUID
			}
		}
	}
}

// placement is the GPU this process would use as the rank its launcher
// names; false where no launcher variable is set.
func placement(count int) (cuda.Placement, bool) {
	for _, v := range []string{"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"} {
		var rank int
		if _, err := fmt.Sscan(os.Getenv(v), &rank); err == nil {
			return cuda.Place(rank, count, os.Getenv), true
		}
	}
	return cuda.Placement{}, false
}

// cudaVersion is a CUDA version code (12040) as users write it ("12.4").
func cudaVersion(code int) string {
	if code <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", code/1000, code%1000/10)
}

// ncclVersion is NCCL_VERSION_CODE as NCCL writes it: 22703 is 2.27.3
// (codes of 2.9 on are major×10000 + minor×100 + patch, older ones
// major×1000 + minor×100 + patch).
func ncclVersion(code int) string {
	switch {
	case code <= 0:
		return ""
	case code >= 20900:
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}

// mapped is the file of a library this process has mapped whose name
// starts with prefix, from /proc/self/maps; "" where none is (or there is
// no /proc).
func mapped(prefix string) string {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		p := strings.Join(f[5:], " ")
		if i := strings.LastIndexByte(p, '/'); i >= 0 && strings.HasPrefix(p[i+1:], prefix) {
			return p
		}
	}
	return ""
}
