package results

import "slices"

// GPUStats is one GPU's telemetry (NVML) over a point's timed iterations,
// sampled by the rank 0 worker for every GPU of its host: at the start, at
// the end and every SampleEvery between. Absent where there is no driver.
// Means are over the samples; NVLink's are its byte counters' difference
// over the point's time, summed over links. A point measured in rounds
// pools its rounds' (mergeGPU).
type GPUStats struct {
	Index   int    `json:"index"`
	Name    string `json:"name,omitempty"`
	Samples int    `json:"samples"`

	UtilPct      float64 `json:"util_pct"` // GPU utilisation, %: mean
	UtilPctMax   float64 `json:"util_pct_max"`
	MemUsedBytes uint64  `json:"mem_used_bytes"` // most
	PowerW       float64 `json:"power_w"`        // mean
	PowerWMax    float64 `json:"power_w_max"`
	SMClockMHz   float64 `json:"sm_clock_mhz"`  // mean
	PCIeTxBps    float64 `json:"pcie_tx_bps"`   // bytes/s, mean of NVML's 20 ms windows
	PCIeRxBps    float64 `json:"pcie_rx_bps"`   //
	NVLinkTxBps  float64 `json:"nvlink_tx_bps"` // bytes/s over the point
	NVLinkRxBps  float64 `json:"nvlink_rx_bps"` //
	// Unsupported names what this GPU's driver would not give (left 0).
	Unsupported []string `json:"unsupported,omitempty"`
}

func cloneGPU(gs []GPUStats) []GPUStats {
	out := slices.Clone(gs)
	for i := range out {
		out[i].Unsupported = slices.Clone(gs[i].Unsupported)
	}
	return out
}

// mergeGPU pools the rounds' telemetry of each GPU into m: means weighted
// by each round's samples, maxima of maxima, a quantity unsupported if any
// round lacked it. A GPU some round did not report (another host's rank 0)
// is left as the first round that had it gave it.
func mergeGPU(m *Record, pooled []*Record) {
	if len(m.GPU) == 0 {
		return
	}
	for i := range m.GPU {
		g := &m.GPU[i]
		var n float64
		var sum GPUStats
		for _, r := range pooled {
			for _, o := range r.GPU {
				if o.Index != g.Index || o.Name != g.Name {
					continue
				}
				w := float64(max(o.Samples, 1))
				n += w
				sum.Samples += o.Samples
				sum.UtilPct += w * o.UtilPct
				sum.PowerW += w * o.PowerW
				sum.SMClockMHz += w * o.SMClockMHz
				sum.PCIeTxBps += w * o.PCIeTxBps
				sum.PCIeRxBps += w * o.PCIeRxBps
				sum.NVLinkTxBps += w * o.NVLinkTxBps
				sum.NVLinkRxBps += w * o.NVLinkRxBps
				sum.UtilPctMax = max(sum.UtilPctMax, o.UtilPctMax)
				sum.PowerWMax = max(sum.PowerWMax, o.PowerWMax)
				sum.MemUsedBytes = max(sum.MemUsedBytes, o.MemUsedBytes)
				for _, u := range o.Unsupported {
					if !slices.Contains(sum.Unsupported, u) {
						sum.Unsupported = append(sum.Unsupported, u)
					}
				}
			}
		}
		if n == 0 {
			continue
		}
		*g = GPUStats{Index: g.Index, Name: g.Name, Samples: sum.Samples,
			UtilPct: sum.UtilPct / n, UtilPctMax: sum.UtilPctMax, MemUsedBytes: sum.MemUsedBytes,
			PowerW: sum.PowerW / n, PowerWMax: sum.PowerWMax, SMClockMHz: sum.SMClockMHz / n,
			PCIeTxBps: sum.PCIeTxBps / n, PCIeRxBps: sum.PCIeRxBps / n,
			NVLinkTxBps: sum.NVLinkTxBps / n, NVLinkRxBps: sum.NVLinkRxBps / n,
			Unsupported: sum.Unsupported}
	}
}
