package stats

import (
	"fmt"
	"strings"
)

// GB is the gigabyte of bandwidth figures: 1e9 bytes, as in nccl-tests.
const GB = 1e9

// AlgBW is the algorithm bandwidth in GB/s of moving bytes in seconds:
// bytes / seconds / 1e9. A non-positive time gives 0 rather than an infinity
// that JSON cannot carry.
func AlgBW(bytes int64, seconds float64) float64 {
	if seconds <= 0 || bytes <= 0 {
		return 0
	}
	return float64(bytes) / seconds / GB
}

// BusBWFactor is the factor nccl-tests multiplies algbw by to get busbw for a
// collective over np ranks (its *GetBw functions, src/<collective>.cu). Names
// are matched ignoring case, '_' and '-' ("all_reduce", "AllReduce" and
// "allreduce" are the same). algbw's size is the larger buffer, as nccl-tests'
// count × nranks for the collectives that split it.
func BusBWFactor(collective string, np int) (float64, error) {
	if np < 1 {
		return 0, fmt.Errorf("stats: busbw of %s: world size %d < 1", collective, np)
	}
	n := float64(np)
	switch normalize(collective) {
	case "allreduce":
		// Each rank sends and receives 2(n−1)/n of the buffer in a
		// bandwidth-optimal allreduce (reduce-scatter + allgather).
		return 2 * (n - 1) / n, nil
	case "allgather", "reducescatter", "alltoall", "gather", "scatter":
		// Each rank (gather's and scatter's root) moves every block
		// of the larger buffer but its own.
		return (n - 1) / n, nil
	case "broadcast", "reduce", "sendrecv", "send", "recv":
		return 1, nil
	case "p2platency", "p2pbw", "p2pbibw":
		// OSU's figures between two ranks: the bandwidth is what the
		// benchmark defines, nothing to scale.
		return 1, nil
	}
	return 0, fmt.Errorf("stats: busbw of unknown collective %q (known: allreduce, allgather, reducescatter, alltoall, broadcast, reduce, sendrecv, gather, scatter)", collective)
}

// BusBW is the bus bandwidth in GB/s for algbw (GB/s) of collective over np
// ranks: algbw × [BusBWFactor].
func BusBW(collective string, np int, algbw float64) (float64, error) {
	f, err := BusBWFactor(collective, np)
	if err != nil {
		return 0, err
	}
	return algbw * f, nil
}

func normalize(name string) string {
	return strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(name))
}
