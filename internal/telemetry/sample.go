//go:build cgo

package telemetry

import (
	"encoding/binary"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/distbench/distbench/results"
)

// sample is one reading of one GPU; ok says which quantities it has.
type sample struct {
	util, memUsed, powerMW, smMHz, pcieTxKBs, pcieRxKBs float64
	ok                                                  [6]bool
}

// The quantities of a sample, in the order of ok, as Unsupported names them.
var quantities = [6]string{"utilisation", "memory used", "power", "SM clock", "PCIe TX", "PCIe RX"}

func read(d nvml.Device) sample {
	var s sample
	if u, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
		s.util, s.ok[0] = float64(u.Gpu), true
	}
	if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
		s.memUsed, s.ok[1] = float64(m.Used), true
	}
	if p, ret := d.GetPowerUsage(); ret == nvml.SUCCESS {
		s.powerMW, s.ok[2] = float64(p), true
	}
	if c, ret := d.GetClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
		s.smMHz, s.ok[3] = float64(c), true
	}
	if v, ret := d.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES); ret == nvml.SUCCESS {
		s.pcieTxKBs, s.ok[4] = float64(v), true
	}
	if v, ret := d.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES); ret == nvml.SUCCESS {
		s.pcieRxKBs, s.ok[5] = float64(v), true
	}
	return s
}

// nvlink is a GPU's NVLink data counters, KiB summed over its links
// (scope UINT_MAX); ok is false where the GPU has none or the driver
// predates them (R470 and older).
type nvlink struct {
	tx, rx uint64
	ok     bool
}

func (s *Sampler) nvlinks() []nvlink {
	out := make([]nvlink, len(s.devs))
	for i, g := range s.devs {
		fv := []nvml.FieldValue{
			{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: 0xFFFFFFFF},
			{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ScopeId: 0xFFFFFFFF},
		}
		if g.d.GetFieldValues(fv) != nvml.SUCCESS || fv[0].NvmlReturn != uint32(nvml.SUCCESS) || fv[1].NvmlReturn != uint32(nvml.SUCCESS) {
			continue
		}
		out[i] = nvlink{tx: fieldUint(fv[0]), rx: fieldUint(fv[1]), ok: true}
	}
	return out
}

// fieldUint reads a field value's unsigned integer, of whichever width
// its type says (the value is a C union, little-endian on every platform
// NVML runs on).
func fieldUint(f nvml.FieldValue) uint64 {
	switch nvml.ValueType(f.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.LittleEndian.Uint32(f.Value[:4]))
	default:
		return binary.LittleEndian.Uint64(f.Value[:])
	}
}

func summarise(g gpu, samples []sample, first, last nvlink, secs float64) results.GPUStats {
	st := results.GPUStats{Index: g.index, Name: g.name, Samples: len(samples)}
	for q := range quantities {
		var sum, most float64
		n := 0
		for _, s := range samples {
			if !s.ok[q] {
				continue
			}
			v := [6]float64{s.util, s.memUsed, s.powerMW, s.smMHz, s.pcieTxKBs, s.pcieRxKBs}[q]
			sum += v
			most = max(most, v)
			n++
		}
		if n == 0 {
			st.Unsupported = append(st.Unsupported, quantities[q])
			continue
		}
		mean := sum / float64(n)
		switch q {
		case 0:
			st.UtilPct, st.UtilPctMax = mean, most
		case 1:
			st.MemUsedBytes = uint64(most)
		case 2:
			st.PowerW, st.PowerWMax = mean/1000, most/1000
		case 3:
			st.SMClockMHz = mean
		case 4:
			st.PCIeTxBps = mean * 1000 // NVML's KB/s
		case 5:
			st.PCIeRxBps = mean * 1000
		}
	}
	if first.ok && last.ok && secs > 0 && last.tx >= first.tx && last.rx >= first.rx {
		st.NVLinkTxBps = float64(last.tx-first.tx) * 1024 / secs
		st.NVLinkRxBps = float64(last.rx-first.rx) * 1024 / secs
	} else {
		st.Unsupported = append(st.Unsupported, "NVLink")
	}
	return st
}
