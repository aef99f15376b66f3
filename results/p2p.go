package results

// OSUFigure is the figure OSU's point-to-point benchmarks print for r, a
// record of collective p2p-latency, p2p-bw or p2p-bibw (see harness/p2p.go):
// the latency in microseconds, half the mean round trip, or the bandwidth in
// MB/s (1e6 bytes). ok is false for any other record.
func OSUFigure(r *Record) (figure float64, ok bool) {
	switch r.Collective {
	case "p2p-latency":
		return r.TimeUsMean / 2, true
	case "p2p-bw", "p2p-bibw":
		return r.AlgBWGBs * 1e3, true
	}
	return 0, false
}
