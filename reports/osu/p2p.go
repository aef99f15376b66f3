package osu

import (
	"fmt"
	"io"

	"github.com/distbench/distbench/results"
)

// The OSU release whose output and defaults this package follows, and
// the constants of its c/util/osu_util.h that shape them.
const (
	Version      = "7.4"
	LargeSize    = 8192    // LARGE_MESSAGE_SIZE: sizes above it get the large iterations
	MaxSize      = 1 << 22 // MAX_MESSAGE_SIZE, 4 MiB
	fieldWidth   = 20      // FIELD_WIDTH
	sizeWidth    = 10      // the "%-*d", 10 of the size column
	floatDigits  = 2       // FLOAT_PRECISION
	itersWidth   = 12      // the "%*lu", 12 of -f's Iterations column
	p2pDTypeName = "uint8" // distbench's name of OSU's MPI_CHAR
)

// P2PHeader is what a point-to-point table's preamble names.
type P2PHeader struct {
	Title    string // OSU's BENCHMARK, without "OSU MPI": "Latency Test"
	Program  string // OSU's program: osu_latency
	Column   string // the figure's column header: "Latency (us)"
	Strategy string
	Link     string
	Window   int // bw and bibw's -W; 0 for latency
}

// WriteP2PHeader writes OSU's preamble (print_preamble: an empty line,
// the benchmark's name), its datatype line and its column header
// (print_only_header: "%-*s%*s", 10, "# Size", FIELD_WIDTH, column).
func WriteP2PHeader(w io.Writer, h P2PHeader) {
	fmt.Fprintf(w, "\n# distbench %s (OSU %s v%s), strategy %s", h.Title, h.Program, Version, h.Strategy)
	if h.Link != "" {
		fmt.Fprintf(w, ", link %s", h.Link)
	}
	if h.Window > 0 {
		fmt.Fprintf(w, ", window %d", h.Window)
	}
	fmt.Fprintf(w, "\n# Datatype: %s.\n", p2pDTypeName)
	fmt.Fprintf(w, "%-*s%*s\n", sizeWidth, "# Size", fieldWidth, h.Column)
}

// WriteP2PRow writes one size as OSU does: "%-*d", 10, size, then
// "%*.*f", FIELD_WIDTH, FLOAT_PRECISION, figure (results.OSUFigure).
func WriteP2PRow(w io.Writer, r *results.Record) {
	fig, _ := results.OSUFigure(r)
	fmt.Fprintf(w, "%-*d%*.*f\n", sizeWidth, r.Bytes, fieldWidth, floatDigits, fig)
}

// Sizes lists the sizes OSU measures from lo to hi: lo, then doubling
// (0 is followed by 1), skipping 0, which has no elements (v7.4's
// "if (0 == num_elements) continue").
func Sizes(lo, hi int64) []int64 {
	var out []int64
	for s := lo; s <= hi; {
		if s > 0 {
			out = append(out, s)
		}
		if s == 0 {
			s = 1
		} else {
			s *= 2
		}
	}
	return out
}
