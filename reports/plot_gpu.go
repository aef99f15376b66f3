package reports

import (
	"fmt"

	"gonum.org/v1/plot"

	"github.com/distbench/distbench/results"
)

// gpuMean is a record's GPU telemetry averaged over its GPUs (those of
// rank 0's host), and whether it has any.
func gpuMean(r *results.Record, f func(g results.GPUStats) float64) (float64, bool) {
	if len(r.GPU) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, g := range r.GPU {
		sum += f(g)
	}
	return sum / float64(len(r.GPU)), true
}

// writeGPU draws, where the records carry GPU telemetry (NVML, sampled
// during the timed iterations), the GPUs' utilisation against message
// size, a line per strategy, and tabulates utilisation, memory, power, SM
// clock and PCIe and NVLink throughput: where busbw says how fast, these
// say what the GPUs and their links were doing meanwhile (a staged
// strategy's PCIe traffic, NCCL's NVLink traffic). Sections without
// telemetry (no driver, older files, peers) get nothing.
func (rp *report) writeGPU(s *section) error {
	has := false
	for _, r := range s.pts {
		has = has || len(r.GPU) > 0
	}
	if !has {
		return nil
	}
	rp.m.h(3, "GPU telemetry vs message size")
	rp.m.p("Sampled through NVML on rank 0's host during each point's timed iterations (at their start, their end and every 100 ms), " +
		"averaged over that host's GPUs: utilisation and power are means of the samples, memory the most used, PCIe NVML's 20 ms windows, " +
		"NVLink its byte counters over the point.")
	for _, np := range s.nps {
		ss, cols := rp.sizeSeries(s, np, func(r *results.Record) (y, down, up float64) {
			v, _ := gpuMean(r, func(g results.GPUStats) float64 { return g.UtilPct })
			return v, 0, 0
		})
		var kept []series
		var keptCols []string
		for _, name := range cols {
			for _, b := range s.sizes {
				if r := s.at(name, np, b); r != nil && len(r.GPU) > 0 {
					keptCols = append(keptCols, name)
					break
				}
			}
		}
		for _, sr := range ss {
			for _, name := range keptCols {
				if sr.name == name {
					kept = append(kept, sr)
				}
			}
		}
		if len(kept) == 0 {
			continue
		}
		p := newPlot(fmt.Sprintf("%s, %d ranks: GPU utilisation", s.title, np), "message size (bytes, log₂ scale)", "GPU utilisation (%)")
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = sizeTicks{}
		if err := addSeries(p, kept); err != nil {
			return err
		}
		rel, err := save(p, rp.dir, "gpu_"+s.slug+fmt.Sprintf("_np%d", np), plotW, plotH)
		if err != nil {
			return err
		}
		rp.m.h(4, fmt.Sprintf("%d ranks", np))
		rp.m.img(fmt.Sprintf("GPU utilisation vs size, %s, %d ranks", s.title, np), rel)
		t := &table{header: []string{"size", "series", "GPU util %", "memory used (GB)", "power (W)", "SM clock (MHz)",
			"PCIe tx/rx (GB/s)", "NVLink tx/rx (GB/s)"}}
		for _, b := range s.sizes {
			for _, name := range keptCols {
				r := s.at(name, np, b)
				if r == nil || len(r.GPU) == 0 {
					continue
				}
				m := func(f func(g results.GPUStats) float64) float64 { v, _ := gpuMean(r, f); return v }
				t.add(s.sizeLabel(np, b), name,
					num(m(func(g results.GPUStats) float64 { return g.UtilPct })),
					num(m(func(g results.GPUStats) float64 { return float64(g.MemUsedBytes) })/1e9),
					num(m(func(g results.GPUStats) float64 { return g.PowerW })),
					num(m(func(g results.GPUStats) float64 { return g.SMClockMHz })),
					num(m(func(g results.GPUStats) float64 { return g.PCIeTxBps })/1e9)+" / "+num(m(func(g results.GPUStats) float64 { return g.PCIeRxBps })/1e9),
					num(m(func(g results.GPUStats) float64 { return g.NVLinkTxBps })/1e9)+" / "+num(m(func(g results.GPUStats) float64 { return g.NVLinkRxBps })/1e9))
			}
		}
		if err := rp.m.table(t); err != nil {
			return err
		}
	}
	return nil
}
