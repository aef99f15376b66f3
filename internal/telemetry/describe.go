//go:build cgo

package telemetry

import (
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Info is what NVML says of the driver and its GPUs, for gpu-check.
type Info struct {
	Library           string // the file asked for ("libnvidia-ml.so.1" for the loader's own search)
	From              string // where it was found
	DriverVersion     string // "580.159.04"; "" where NVML cannot say
	NVMLVersion       string
	CUDADriverVersion int // the newest CUDA the driver runs, 1000×major + 10×minor; 0 where unknown
	GPUs              []GPUInfo
}

// GPUInfo is one GPU as NVML numbers it (all of the host's, whatever
// CUDA_VISIBLE_DEVICES says).
type GPUInfo struct {
	Index       int
	Name        string
	UUID        string
	PCIBusID    string // as the CUDA runtime writes it, to match the two
	MemoryBytes uint64
}

// Describe says what NVML knows of the driver and the GPUs; a nil
// Sampler, nothing.
func (s *Sampler) Describe() Info {
	if s == nil {
		return Info{}
	}
	info := Info{Library: s.from.Path, From: s.from.From}
	if v, ret := s.lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		info.DriverVersion = v
	}
	if v, ret := s.lib.SystemGetNVMLVersion(); ret == nvml.SUCCESS {
		info.NVMLVersion = v
	}
	if v, ret := s.lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		info.CUDADriverVersion = v
	}
	for _, g := range s.devs {
		gi := GPUInfo{Index: g.index, Name: g.name}
		if u, ret := g.d.GetUUID(); ret == nvml.SUCCESS {
			gi.UUID = u
		}
		if p, ret := g.d.GetPciInfo(); ret == nvml.SUCCESS {
			gi.PCIBusID = busID(p.BusId[:])
		}
		if m, ret := g.d.GetMemoryInfo(); ret == nvml.SUCCESS {
			gi.MemoryBytes = m.Total
		}
		info.GPUs = append(info.GPUs, gi)
	}
	return info
}

// busID is NVML's C string of a PCI bus id ("00000000:3B:00.0", a domain
// of eight digits) in the CUDA runtime's form ("0000:3B:00.0").
func busID(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	s := strings.ToUpper(sb.String())
	if dom, rest, ok := strings.Cut(s, ":"); ok && len(dom) == 8 && strings.HasPrefix(dom, "0000") {
		s = dom[4:] + ":" + rest
	}
	return s
}
