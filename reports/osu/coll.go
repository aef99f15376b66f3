package osu

import (
	"fmt"
	"io"
	"slices"

	"github.com/distbench/distbench/results"
)

// The collective tests' defaults (c/mpi/collective/blocking/osu_*.c and
// osu_util.h): sizes up to 1 MiB, 1000 iterations and 200 warm-up up to
// LargeSize bytes, 100 and 10 above.
const (
	CollMaxSize    = 1 << 20
	CollIters      = 1000
	CollSkip       = 200
	CollItersLarge = 100
	CollSkipLarge  = 10
	// collFieldWidth is the width of the collective tables' figure
	// columns as OSU prints them ("# Size       Avg Latency(us)": 18).
	collFieldWidth = 18
)

// CollTest is one of OSU's blocking collective latency tests.
type CollTest struct {
	Name       string // distbench osu NAME
	Program    string // OSU's program: osu_allreduce
	Title      string // OSU's BENCHMARK, without "OSU MPI"
	Collective string // distbench's collective
	// PerRank says OSU's size is what each rank contributes (allgather,
	// gather, scatter, alltoall: the count per rank), where distbench's
	// sizes, as nccl-tests', name the larger buffer (size × np).
	PerRank bool
	// DType is the element type: OSU's MPI_FLOAT for the reductions
	// (whose sizes then start at 4 bytes), MPI_CHAR for the others.
	DType string
}

// CollTests are the collective tests `distbench osu` runs.
var CollTests = []CollTest{
	{"allreduce", "osu_allreduce", "Allreduce Latency Test", "allreduce", false, "float32"},
	{"allgather", "osu_allgather", "Allgather Latency Test", "allgather", true, "uint8"},
	{"alltoall", "osu_alltoall", "All-to-All Personalized Exchange Latency Test", "alltoall", true, "uint8"},
	{"bcast", "osu_bcast", "Broadcast Latency Test", "broadcast", false, "uint8"},
	{"reduce", "osu_reduce", "Reduce Latency Test", "reduce", false, "float32"},
	{"reduce_scatter", "osu_reduce_scatter", "Reduce_scatter Latency Test", "reducescatter", false, "float32"},
	{"gather", "osu_gather", "Gather Latency Test", "gather", true, "uint8"},
	{"scatter", "osu_scatter", "Scatter Latency Test", "scatter", true, "uint8"},
}

// CollHeader is what a collective table's preamble names.
type CollHeader struct {
	Test     CollTest
	Strategy string
	Link     string
	NP       int
	Full     bool // -f: Min, Max and Iterations columns too
}

// WriteCollHeader writes OSU's preamble and column header for a
// collective test: "# Size", then "Avg Latency(us)", and with -f
// "Min Latency(us)", "Max Latency(us)" and "Iterations".
func WriteCollHeader(w io.Writer, h CollHeader) {
	fmt.Fprintf(w, "\n# distbench %s (OSU %s v%s), strategy %s, np %d", h.Test.Title, h.Test.Program, Version, h.Strategy, h.NP)
	if h.Link != "" {
		fmt.Fprintf(w, ", link %s", h.Link)
	}
	fmt.Fprintf(w, "\n# Datatype: %s.\n", h.Test.DType)
	fmt.Fprintf(w, "%-*s%*s", sizeWidth, "# Size", collFieldWidth, "Avg Latency(us)")
	if h.Full {
		fmt.Fprintf(w, "%*s%*s%*s", collFieldWidth, "Min Latency(us)", collFieldWidth, "Max Latency(us)", itersWidth, "Iterations")
	}
	fmt.Fprintln(w)
}

// CollLatency is OSU's definition of a collective's latency: each rank
// times its own calls, and its latency is its mean over the timed
// iterations; Avg is the mean of those over ranks, Min and Max the least
// and most. (distbench's own time, the median over iterations of the
// slowest rank's time, stays in the records.) A record without per-rank
// means gives its slowest rank's mean for all three.
func CollLatency(r *results.Record) (avg, lo, hi float64) {
	m := r.RankMeanUs
	if len(m) == 0 {
		return r.TimeUsMean, r.TimeUsMean, r.TimeUsMean
	}
	for _, v := range m {
		avg += v
	}
	return avg / float64(len(m)), slices.Min(m), slices.Max(m)
}

// WriteCollRow writes one size as OSU does: "%-*d", 10, the size, then
// the figures in "%*.*f" (FLOAT_PRECISION 2) and, with -f, the
// iterations in "%*lu", 12.
func WriteCollRow(w io.Writer, size int64, r *results.Record, full bool) {
	avg, lo, hi := CollLatency(r)
	fmt.Fprintf(w, "%-*d%*.*f", sizeWidth, size, collFieldWidth, floatDigits, avg)
	if full {
		fmt.Fprintf(w, "%*.*f%*.*f%*d", collFieldWidth, floatDigits, lo, collFieldWidth, floatDigits, hi, itersWidth, r.Iters)
	}
	fmt.Fprintln(w)
}

// LookupColl finds a collective test by its name, or by OSU's program
// name or distbench's collective.
func LookupColl(name string) (CollTest, bool) {
	for _, t := range CollTests {
		if name == t.Name || name == t.Program || name == t.Collective {
			return t, true
		}
	}
	return CollTest{}, false
}
