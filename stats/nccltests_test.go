package stats

import "testing"

// TestBandwidthAsNCCLTests checks AlgBW and BusBW against nccl-tests 2.19.6's
// own definitions, row by row. nccl-tests passes its *GetBw function the
// count its *GetCollByteCount calls paramcount (one rank's block for the
// collectives that split the buffer) and scales it back up by nranks there;
// distbench records the larger buffer's bytes instead. Both must give the
// same figures.
func TestBandwidthAsNCCLTests(t *testing.T) {
	const (
		size     = 3 << 20 // the larger buffer: np × a multiple of 16 bytes for every np below, so neither rounds
		typesize = 4
		sec      = 1e-3
	)
	type getBw func(count, typesize int, sec float64, nranks int) (algBw, busBw float64)
	// baseTimesFactor is the shape every *GetBw has: baseBw = count ×
	// typesize × scale / 1e9 / sec, busBw = baseBw × factor.
	baseTimesFactor := func(scale, factor func(n float64) float64) getBw {
		return func(count, typesize int, sec float64, nranks int) (float64, float64) {
			n := float64(nranks)
			base := float64(count*typesize) * scale(n) / 1.0e9 / sec
			return base, base * factor(n)
		}
	}
	one := func(float64) float64 { return 1 }
	nranks := func(n float64) float64 { return n }
	ring := func(n float64) float64 { return (n - 1) / n }
	tests := []struct {
		cite       string // nccl-tests' file and function
		collective string
		blocks     bool // GetCollByteCount's paramcount is count/nranks
		getBw      getBw
	}{
		{"src/all_reduce.cu AllReduceGetBw", "allreduce", false, baseTimesFactor(one, func(n float64) float64 { return 2 * (n - 1) / n })},
		{"src/all_gather.cu AllGatherGetBw", "allgather", true, baseTimesFactor(nranks, ring)},
		{"src/reduce_scatter.cu ReduceScatterGetBw", "reducescatter", true, baseTimesFactor(nranks, ring)},
		{"src/alltoall.cu AlltoAllGetBw", "alltoall", true, baseTimesFactor(nranks, ring)},
		{"src/gather.cu GatherGetBw", "gather", true, baseTimesFactor(nranks, ring)},
		{"src/scatter.cu ScatterGetBw", "scatter", true, baseTimesFactor(nranks, ring)},
		{"src/broadcast.cu BroadcastGetBw", "broadcast", false, baseTimesFactor(one, one)},
		{"src/reduce.cu ReduceGetBw", "reduce", false, baseTimesFactor(one, one)},
		{"src/sendrecv.cu SendRecvGetBw", "sendrecv", false, baseTimesFactor(one, one)},
	}
	for _, tt := range tests {
		for _, np := range []int{1, 2, 3, 4, 8} {
			param := size / typesize
			if tt.blocks {
				param /= np
			}
			wantAlg, wantBus := tt.getBw(param, typesize, sec, np)
			alg := AlgBW(size, sec)
			bus, err := BusBW(tt.collective, np, alg)
			if err != nil || !near(alg, wantAlg, 1e-12) || !near(bus, wantBus, 1e-12) {
				t.Errorf("%s, np %d: algbw %v, busbw %v, %v; nccl-tests' %s gives %v, %v",
					tt.collective, np, alg, bus, err, tt.cite, wantAlg, wantBus)
			}
		}
	}
}
