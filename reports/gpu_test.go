package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
)

// Records with GPU telemetry (device runs on a GPU machine) get its plot
// and table; the same strategy on device buffers is a series apart from
// its host runs; a run without telemetry gets no GPU section.
func TestGPUTelemetrySection(t *testing.T) {
	for _, withGPU := range []bool{true, false} {
		dir := t.TempDir()
		w, err := results.NewWriter(dir, synthEnv)
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range []string{"", "cuda"} {
			for _, st := range []string{"nccl", "ring"} {
				for _, b := range []int64{1 << 10, 1 << 20} {
					r := &results.Record{Kind: results.KindCollective, Collective: "allreduce", Strategy: st, NP: 2, Bytes: b, Count: b / 4,
						DType: "float32", Op: "sum", InPlace: true, Device: dev, Iters: 5, TimeUs: 100, TimeUsP95: 110, AlgBWGBs: 1, BusBWGBs: 1}
					if withGPU && dev != "" {
						r.GPU = []results.GPUStats{{Index: 0, Name: "H100", Samples: 2, UtilPct: 40, PowerW: 300, SMClockMHz: 1980,
							MemUsedBytes: 2e9, PCIeTxBps: 1e9, NVLinkTxBps: 5e10}}
					}
					if err := w.Write(r); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		w.Close()
		if err := Generate(dir); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(dir, ReportFile))
		md := string(data)
		if got := strings.Contains(md, "GPU telemetry vs message size"); got != withGPU {
			t.Errorf("with telemetry %v: GPU section present %v", withGPU, got)
		}
		if !strings.Contains(md, "nccl (cuda)") || !strings.Contains(md, "ring (cuda)") {
			t.Errorf("device runs are not series of their own")
		}
		pngs, _ := filepath.Glob(filepath.Join(dir, "*", "gpu_*.png"))
		pngs2, _ := filepath.Glob(filepath.Join(dir, "gpu_*.png"))
		if n := len(pngs) + len(pngs2); (n > 0) != withGPU {
			t.Errorf("with telemetry %v: %d GPU plots", withGPU, n)
		}
		if withGPU && !strings.Contains(md, "| 1KiB") && !strings.Contains(md, "40") {
			t.Errorf("GPU table missing:\n%s", md)
		}
	}
}
