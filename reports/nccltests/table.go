package nccltests

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// Version is the nccl-tests release whose output this table reproduces,
// column for column: the format scripts written for it parse.
const Version = "2.19.6"

// TimestampLayout is nccl-tests' timestamp (-S 1): strftime
// "%Y-%m-%d %H:%M:%S".
const TimestampLayout = "2006-01-02 15:04:05"

// Config is what the table says of the run besides its records: the job,
// the size range and nccl-tests' output options, as the command line set
// them.
type Config struct {
	Args      []string // the command line, for "Collective test starting"
	Strategy  string
	NP        int
	Transport string
	Link      string
	Options   map[string]string
	Warmup    int
	Iters     int
	// MinBytes, MaxBytes and the step (StepBytes when positive, else
	// StepFactor) are -b, -e and -i or -f, for the preamble.
	MinBytes, MaxBytes int64
	StepFactor         float64
	StepBytes          int64
	// CheckRuns is -c: checked runs per size, 0 for an unchecked run
	// (#wrong then reads N/A).
	CheckRuns int
	// Modes is which forms are measured: both, out or in.
	Modes string
	// Average is -a: -1 for distbench's time (the median over iterations
	// of the slowest rank's time); 0..3 for nccl-tests' (each rank's mean
	// iteration time, then rank 0's, the average, the minimum or the
	// maximum over ranks).
	Average int
	// PerIter is -I: the per-iteration columns i_min, i_max, i_p99, i_cv%
	// of each iteration's slowest-rank time; PerIterSkip (-K) leading
	// iterations are left out of those summaries.
	PerIter     bool
	PerIterSkip int
	Timestamps  bool // -S: a timestamp closes every row
	// MinBusBW is NCCL_TESTS_MIN_BW: the average bus bandwidth (GB/s)
	// below whose 90% the run fails, there and here; 0 checks nothing.
	MinBusBW float64
	Version  string       // distbench's version line
	Env      *results.Env // this host, for the devices' descriptions
	Now      func() time.Time
}

// Table prints nccl-tests' table: one line per size, out-of-place columns
// then in-place columns, as the records for that size arrive; the
// preamble waits for the first record, which names every rank's host and
// pid.
type Table struct {
	w        *bufio.Writer
	cfg      Config
	pending  map[string][2]*results.Record
	order    []string // pending keys in arrival order, for a failed run's half rows
	busbw    []float64
	wire     []*results.Record // the first record with wire bytes of each size, type and op, for wireTable
	wireSeen map[string]bool   // their rows, less the cycle (-N repeats them)
	wrong    int64
	check    bool
	rows     int
	started  bool
	doc      *Doc // -J, nil without
	last     *results.Record
	slow     map[int]*slowRank // by rank, see noteSlowest
	measured int               // records measured without error
}

// NewTable starts a table; nothing is printed before the first record
// or Footer.
func NewTable(w io.Writer, cfg Config) *Table {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Env == nil {
		cfg.Env = &results.Env{}
	}
	return &Table{w: bufio.NewWriter(w), cfg: cfg, pending: map[string][2]*results.Record{}, check: cfg.CheckRuns > 0}
}

// SetDoc makes the table write -J's document as it prints its rows.
func (t *Table) SetDoc(d *Doc) { t.doc = d }

// Wrong is the number of wrong elements in the rows printed so far.
func (t *Table) Wrong() int64 { return t.wrong }

// rowKey is what one row of the table shares: its two records differ only
// in where the result goes.
func rowKey(r *results.Record) string {
	return fmt.Sprintf("%s/%s/%d/%d", r.DType, r.Op, r.Bytes, r.Round)
}

// Add prints r's row once both its forms have arrived (one, with Modes
// out or in).
func (t *Table) Add(r *results.Record) {
	if !t.started {
		t.preamble(r)
	}
	t.last = r
	key := rowKey(r)
	pair, seen := t.pending[key]
	if !seen {
		t.order = append(t.order, key)
	}
	if r.InPlace {
		pair[1] = r
	} else {
		pair[0] = r
	}
	t.pending[key] = pair
	if (t.cfg.Modes == "both" && pair[0] != nil && pair[1] != nil) || t.cfg.Modes != "both" {
		t.row(pair)
		delete(t.pending, key)
		t.order = slices.DeleteFunc(t.order, func(k string) bool { return k == key })
	}
}

// preamble is nccl-tests' opening: what ran, with which settings, on which
// devices, then the column headers. first, the first record, names the
// ranks; nil when the run failed before measuring anything.
func (t *Table) preamble(first *results.Record) {
	t.started = true
	c := t.cfg
	fmt.Fprintf(t.w, "# distbench version %s; nccl-tests %s output format\n", c.Version, Version)
	fmt.Fprintf(t.w, "# Collective test starting: %s\n", strings.Join(c.Args, " "))
	step := fmt.Sprintf("%g(factor)", c.StepFactor)
	if c.StepBytes > 0 {
		step = fmt.Sprintf("%d(bytes)", c.StepBytes)
	}
	fmt.Fprintf(t.w, "# nThread 1 nGpus 1 minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0 unalign: 0\n",
		c.MinBytes, c.MaxBytes, step, c.Warmup, c.Iters, c.CheckRuns)
	if c.PerIter {
		fmt.Fprintf(t.w, "# Per-Iteration Report: wall-clock timing per rank; i_* uses max over process rows")
		if c.PerIterSkip > 0 {
			fmt.Fprintf(t.w, "; summary skips first %d iterations", c.PerIterSkip)
		}
		fmt.Fprintf(t.w, " \n")
	}
	fmt.Fprintf(t.w, "# distbench: strategy %s, np %d, transport %s", c.Strategy, c.NP, c.Transport)
	if c.Link != "" {
		fmt.Fprintf(t.w, ", link %s", c.Link)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Options)) {
		fmt.Fprintf(t.w, ", %s=%s", k, c.Options[k])
	}
	fmt.Fprintf(t.w, "\n# distbench: time is %s\n#\n", TimeDefinition(c.Average))
	fmt.Fprintf(t.w, "# Using devices\n")
	for _, d := range devices(first, c.NP, c.Env) {
		fmt.Fprintf(t.w, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", d.Rank, d.Group, d.PID, d.Hostname, d.Device, d.DeviceHex, d.DeviceInfo)
	}
	if t.doc != nil {
		t.doc.configure(c, first)
	}
	t.header()
}

// TimeDefinition says in words what the time column is under -a.
func TimeDefinition(average int) string {
	switch average {
	case 0:
		return "rank 0's mean iteration time (-a 0, as nccl-tests)"
	case 1:
		return "the mean over ranks of each rank's mean iteration time (-a 1, as nccl-tests' default)"
	case 2:
		return "the least over ranks of each rank's mean iteration time (-a 2, as nccl-tests)"
	case 3:
		return "the most over ranks of each rank's mean iteration time (-a 3, as nccl-tests)"
	}
	return "the median over iterations of the slowest rank's time (nccl-tests -a 1 averages each rank's mean instead)"
}

// device is one rank's line of "# Using devices", and its entry in -J's
// config.devices. A CPU rank has no device: -1, and the CPU's model.
type device struct {
	Rank       int    `json:"rank"`
	Group      int    `json:"group"`
	PID        int    `json:"pid"`
	Hostname   string `json:"hostname"`
	Device     int    `json:"device"`
	DeviceHex  string `json:"device_hex"`
	DeviceInfo string `json:"device_info"`
}

func devices(first *results.Record, np int, env *results.Env) []device {
	out := make([]device, np)
	for r := range out {
		host, pid := "?", 0
		if first != nil && r < len(first.RankHosts) {
			host = first.RankHosts[r]
		}
		if first != nil && r < len(first.RankPIDs) {
			pid = first.RankPIDs[r]
		}
		info := "host memory"
		if env.CPUModel != "" && host == env.Host {
			info = env.CPUModel + ", host memory"
		}
		out[r] = device{Rank: r, PID: pid, Hostname: host, Device: -1, DeviceHex: "cpu", DeviceInfo: info}
	}
	return out
}

func (t *Table) header() {
	ts := func(s string) string {
		if !t.cfg.Timestamps {
			return " "
		}
		return fmt.Sprintf(" %19s", s)
	}
	lbl := "time"
	if t.cfg.PerIter {
		fmt.Fprintf(t.w, "#\n# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                                in-place (+ per-iteration)\n", "", "", "", "", "")
		fmt.Fprintf(t.w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s%s\n",
			"size", "count", "type", "redop", "root",
			lbl, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%",
			lbl, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%", ts("timestamp"))
		fmt.Fprintf(t.w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s%s\n",
			"(B)", "(elements)", "", "", "",
			"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)",
			"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", ts("%Y-%m-%d %H:%M:%S"))
	} else {
		fmt.Fprintf(t.w, "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "", "")
		fmt.Fprintf(t.w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n", "size", "count", "type", "redop", "root",
			lbl, "algbw", "busbw", "#wrong", lbl, "algbw", "busbw", "#wrong", ts("timestamp"))
		fmt.Fprintf(t.w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n", "(B)", "(elements)", "", "", "",
			"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", ts("%Y-%m-%d %H:%M:%S"))
	}
	t.w.Flush()
}

// TypeName is nccl-tests' name of a distbench dtype.
func TypeName(dtype string) string {
	switch dtype {
	case "float32":
		return "float"
	case "float64":
		return "double"
	case "float16":
		return "half"
	}
	return dtype
}

// Count is nccl-tests' count column: elements per rank's buffer, the
// larger buffer's count divided by np for the collectives that split it.
func Count(r *results.Record) int64 {
	if Blocks(r.Collective) && r.NP > 0 {
		return r.Count / int64(r.NP)
	}
	return r.Count
}

// Blocks reports whether a collective's larger buffer splits into np equal
// blocks, one a rank (harness/job's Traits.Blocks, which a test in
// cmd/distbench holds this to: reports do not import the harness).
func Blocks(collective string) bool {
	switch collective {
	case "allgather", "reducescatter", "gather", "scatter", "alltoall":
		return true
	}
	return false
}

// figures are one side of a row: time and bandwidths by the -a rule.
type figures struct{ timeUs, algbw, busbw float64 }

func (t *Table) figures(r *results.Record) figures {
	if t.cfg.Average < 0 {
		return figures{r.TimeUs, r.AlgBWGBs, r.BusBWGBs} // distbench's, as recorded
	}
	us := r.TimeUsMean // a record without per-rank means: the slowest rank's mean
	if m := r.RankMeanUs; len(m) > 0 {
		switch t.cfg.Average {
		case 0:
			us = m[0]
		case 1:
			us = 0
			for _, v := range m {
				us += v
			}
			us /= float64(len(m))
		case 2:
			us = slices.Min(m)
		case 3:
			us = slices.Max(m)
		}
	}
	alg := stats.AlgBW(r.Bytes, us/1e6)
	bus, _ := stats.BusBW(r.Collective, r.NP, alg)
	return figures{us, alg, bus}
}

func (t *Table) row(pair [2]*results.Record) {
	first := pair[0]
	if first == nil {
		first = pair[1]
	}
	op := first.Op
	if op == "" {
		op = "none"
	}
	fmt.Fprintf(t.w, "%12d  %12d  %8s  %6s  %6d", first.Bytes, Count(first), TypeName(first.DType), op, first.Root)
	if key := fmt.Sprintf("%s/%s/%d", first.DType, first.Op, first.Bytes); !t.wireSeen[key] {
		for _, r := range pair {
			if r != nil && r.Error == "" && r.HasWire() {
				if t.wireSeen == nil {
					t.wireSeen = map[string]bool{}
				}
				t.wireSeen[key] = true
				t.wire = append(t.wire, r)
				break
			}
		}
	}
	var entry *ncclResult
	if t.doc != nil {
		entry = t.doc.result(first, TypeName(first.DType), op)
	}
	for side, r := range pair {
		if r == nil {
			if side == 0 && t.cfg.Modes == "in" {
				fmt.Fprint(t.w, "                                ")
			}
			continue
		}
		if r.Error != "" {
			fmt.Fprintf(t.w, "  %7s  %6s  %6s  %6s", "failed", "-", "-", "-")
			if t.cfg.PerIter {
				fmt.Fprintf(t.w, "  %7s  %7s  %7s  %7s", "-", "-", "-", "-")
			}
			continue
		}
		t.measured++
		t.noteSlowest(r)
		fig := t.figures(r)
		if t.check {
			fmt.Fprintf(t.w, "  %7s  %6s  %6s  %6.6g", FloatStr(fig.timeUs, 7), FloatStr(fig.algbw, 6), FloatStr(fig.busbw, 6), float64(max(r.Wrong, 0)))
			t.wrong += max(r.Wrong, 0)
		} else {
			fmt.Fprintf(t.w, "  %7s  %6s  %6s    N/A", FloatStr(fig.timeUs, 7), FloatStr(fig.algbw, 6), FloatStr(fig.busbw, 6))
		}
		var it stats.IterStats
		if t.cfg.PerIter {
			it = stats.SummarizeIterations(r.SamplesUs, t.cfg.PerIterSkip)
			fmt.Fprintf(t.w, "  %7s  %7s  %7s  %7s", FloatStr(it.Min, 7), FloatStr(it.Max, 7), FloatStr(it.P99, 7), FloatStr(it.CVPct, 7))
		}
		if entry != nil {
			entry.set(side == 1, r, fig, t.check, t.cfg.PerIter, it)
		}
		t.busbw = append(t.busbw, fig.busbw)
	}
	if t.cfg.Timestamps {
		fmt.Fprintf(t.w, "%21s", t.cfg.Now().Format(TimestampLayout))
	}
	fmt.Fprintln(t.w)
	t.rows++
	t.w.Flush()
	if t.doc != nil {
		t.doc.add(entry)
	}
}

// FloatStr is nccl-tests' getFloatStr: the value in width characters with
// two decimals, or one, or none, or in exponent form when nothing fits.
func FloatStr(v float64, width int) string {
	for _, prec := range []int{2, 1, 0} {
		if s := strconv.FormatFloat(v, 'f', prec, 64); len(s) <= width {
			return fmt.Sprintf("%*s", width, s)
		}
	}
	if width >= 7 {
		return fmt.Sprintf("%*.1e", width, v)
	}
	return fmt.Sprintf("%*.0e", width, v)
}

// Footer closes the table as nccl-tests does, after distbench's own
// comment lines (bytes on the wire, the slowest rank). It reports whether
// the average bus bandwidth fell below NCCL_TESTS_MIN_BW's 90%, which
// fails the run there and here.
func (t *Table) Footer(runErr error) (bwFailed bool, docErr error) {
	if !t.started {
		t.preamble(nil)
	}
	for _, k := range t.order { // a failed run leaves half rows
		t.row(t.pending[k])
	}
	t.wireTable()
	t.slowestRank()
	status := "OK"
	if t.wrong > 0 {
		status = "FAILED"
	}
	fmt.Fprintf(t.w, "# %-20s : %d %s\n", "Out of bounds values", t.wrong, status)
	avg := 0.0
	for _, b := range t.busbw {
		avg += b
	}
	if len(t.busbw) > 0 {
		avg /= float64(len(t.busbw))
	}
	minBW, bwChecked := t.cfg.MinBusBW, t.cfg.MinBusBW > 0
	bwStatus := ""
	if bwChecked {
		bwStatus, bwFailed = "OK", avg < minBW*0.9
		if bwFailed {
			bwStatus = "FAILED"
		}
	}
	fmt.Fprintf(t.w, "# %-20s : %.6g %s\n", "Avg bus bandwidth", avg, bwStatus)
	fmt.Fprintf(t.w, "#\n# Collective test concluded: %s\n#\n", strings.Join(t.cfg.Args, " "))
	if runErr != nil {
		fmt.Fprintf(t.w, "# incomplete: the run failed after %d rows\n# error: %s\n", t.rows, oneLine(runErr.Error()))
	} else {
		fmt.Fprintln(t.w)
	}
	t.w.Flush()
	if t.doc != nil {
		docErr = t.doc.finish(t.wrong, avg, minBW, bwChecked, runErr)
	}
	return bwFailed, docErr
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
