package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distbench/distbench/results"
)

// ReportFile is the report's name inside the run directory.
const ReportFile = "report.md"

// maxListed caps how many missing points the status lists by name.
const maxListed = 20

type report struct {
	dir    string
	run    *results.Run
	m      md
	colors colors
	// incomplete is set by writeStatus when it listed what the run lacks,
	// so that the verdict's caveats point there instead of listing it again.
	incomplete bool
	// cluster is the cost model's view beyond this machine, nil where the
	// run cannot calibrate it.
	cluster *clusterModel
}

// Generate reads RUN_DIR/results.jsonl and writes RUN_DIR/report.md with its
// plots in RUN_DIR/plots (PNG and SVG), each table also as CSV in
// RUN_DIR/tables, and the same report as one self-contained
// RUN_DIR/report.html. It works on an interrupted run too: the report then
// says what is missing. A point measured in rounds is reported once, from
// its rounds merged (results.MergeRounds). Generate is deterministic: the
// same results give the same markdown.
func Generate(runDir string) error {
	run, err := readRun(runDir)
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	rp := &report{dir: runDir, run: run, m: md{dir: runDir}}
	var names []string
	for i := range run.Records {
		if n := baseName(&run.Records[i]); n != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	rp.colors = newColors(slices.Compact(names))
	if err := rp.write(); err != nil {
		return fmt.Errorf("reports: %s: %w", runDir, err)
	}
	if err := writeFileAtomic(filepath.Join(runDir, ReportFile), rp.m.Bytes()); err != nil {
		return err
	}
	if err := writeHTML(runDir, "distbench report: "+filepath.Base(filepath.Clean(runDir)), rp.m.Bytes()); err != nil {
		return fmt.Errorf("reports: %s: %w", runDir, err)
	}
	return nil
}

func (rp *report) write() error {
	rp.m.h(1, "distbench report: "+filepath.Base(filepath.Clean(rp.dir)))
	secs := collectiveSections(rp.run.Records)
	cm, err := rp.fitCluster()
	if err != nil {
		return fmt.Errorf("cluster-scale model: %w", err)
	}
	rp.cluster = cm
	rp.writeHeadline(secs)
	if err := rp.writeEnv(); err != nil {
		return err
	}
	rp.writeStatus()
	rp.writeVerdict(secs)
	if err := rp.writeRanks(); err != nil {
		return fmt.Errorf("per-rank times: %w", err)
	}
	if len(secs) > 0 {
		rp.m.h(2, "Contents")
		for _, s := range secs {
			rp.m.WriteString(fmt.Sprintf("- [%s](#%s)\n", s.title, anchor(s.title)))
		}
		if len(trainGroups(rp.run.Records)) > 0 {
			rp.m.WriteString("- [Training](#training)\n")
		}
		rp.m.WriteString("\n")
	}
	for _, s := range secs {
		rp.m.h(2, s.title)
		steps := []func(*section) error{rp.writeWinners, rp.writeBusBW, rp.writeWire, rp.writeGPU, rp.writeLatency, rp.writeScaling}
		if s.sizes[len(s.sizes)-1] <= 0 {
			// Nothing to draw against size on a log axis (a barrier, say).
			steps = []func(*section) error{rp.writeWinners, rp.writeScaling}
		}
		for _, f := range steps {
			if err := f(s); err != nil {
				return fmt.Errorf("%s: %w", s.title, err)
			}
		}
	}
	if groups := trainGroups(rp.run.Records); len(groups) > 0 {
		rp.m.h(2, "Training")
		for _, g := range groups {
			rp.m.h(3, g.title)
			if err := rp.writeConvergence(g); err != nil {
				return fmt.Errorf("training %s: %w", g.title, err)
			}
			if err := rp.writeStepTime(g); err != nil {
				return fmt.Errorf("training %s: %w", g.title, err)
			}
			if err := rp.writeTraffic(g); err != nil {
				return fmt.Errorf("training %s: %w", g.title, err)
			}
		}
	}
	if err := rp.writeCluster(rp.cluster); err != nil {
		return fmt.Errorf("cluster-scale model: %w", err)
	}
	if err := rp.writeModel(); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return rp.writeFailed()
}

func (rp *report) writeEnv() error {
	env := rp.run.Env
	rp.m.h(2, "Environment")
	if env == nil {
		rp.m.p("The results have no env record: where and how they were measured is unknown.")
		return nil
	}
	t := &table{header: []string{"", ""}, left: map[int]bool{1: true}}
	t.add("host", env.Host)
	t.add("CPU", fmt.Sprintf("%s, %d cores", env.CPUModel, env.Cores))
	mem := "unknown"
	if env.MemBytes > 0 {
		mem = fmt.Sprintf("%.1f GiB", float64(env.MemBytes)/(1<<30))
	}
	t.add("memory", mem)
	t.add("kernel", env.Kernel)
	t.add("Go", env.GoVersion)
	if env.Reduce != "" {
		t.add("reductions", env.Reduce)
	}
	t.add("commit", env.Commit)
	if env.Link != "" {
		t.add("link shaping", env.Link)
	}
	if trs := transportsOf(rp.run.Records); len(trs) > 1 || len(trs) == 1 && trs[0] != "tcp" {
		// Only where something other than TCP ran, which series
		// names say too ("ring/shm").
		t.add("transports", strings.Join(trs, ", ")+" (shm: shared memory within a host; auto: shm within a host, TCP across)")
	}
	t.add("started", env.StartedAt.UTC().Format(time.RFC3339))
	if last := rp.run.Envs[len(rp.run.Envs)-1]; rp.run.Finished {
		t.add("finished", fmt.Sprintf("%s (%s)", last.FinishedAt.UTC().Format(time.RFC3339),
			results.FormatDuration(last.FinishedAt.Sub(env.StartedAt))))
	}
	if len(env.Args) > 0 {
		t.add("command", strings.Join(env.Args, " "))
	}
	if err := rp.m.table(t); err != nil {
		return err
	}
	// A resumed run may have continued elsewhere; say so, because its
	// points are then not comparable with each other.
	for _, e := range rp.run.Envs[1:] {
		if e.Host != env.Host || e.CPUModel != env.CPUModel || e.Commit != env.Commit || e.GoVersion != env.GoVersion || e.Reduce != env.Reduce {
			rp.m.p("**Warning:** a later session ran on %s (%s), commit %s, %s, reductions %s: points from different sessions may not be comparable.",
				e.Host, e.CPUModel, e.Commit, e.GoVersion, e.Reduce)
		}
	}
	return nil
}

// oversubscribed lists, in order, the world sizes of recs' measured points
// above cores (unknown when 0).
func oversubscribed(recs []results.Record, cores int) []string {
	if cores <= 0 {
		return nil
	}
	var nps []int
	for i := range recs {
		if r := &recs[i]; r.NP > cores && !slices.Contains(nps, r.NP) {
			nps = append(nps, r.NP)
		}
	}
	slices.Sort(nps)
	out := make([]string, len(nps))
	for i, np := range nps {
		out[i] = strconv.Itoa(np)
	}
	return out
}

// writeStatus says whether the run is complete and, if not, why not.
func (rp *report) writeStatus() {
	run := rp.run
	rp.m.h(2, "Status")
	var reasons []string
	if !run.Finished {
		reasons = append(reasons, "the run did not finish: it was interrupted, or is still running")
	}
	if run.Truncated {
		reasons = append(reasons, "the last record was cut short by the interruption and is left out")
	}
	nErr, nInc, skipped := sortFailed(run)
	nWrong := 0
	for i := range run.Records {
		if r := &run.Records[i]; r.Wrong > 0 && r.Error == "" {
			nWrong++
		}
	}
	if nErr > 0 {
		reasons = append(reasons, fmt.Sprintf("%d point(s) failed (listed under [Failed points](#failed-points))", nErr))
	}
	if nInc > 0 {
		reasons = append(reasons, fmt.Sprintf("%d point(s) stopped short (incomplete)", nInc))
	}
	if nWrong > 0 {
		reasons = append(reasons, fmt.Sprintf("%d point(s) computed wrong results and are left out of plots and rankings", nWrong))
	}
	missing := run.Missing()
	if len(missing) > 0 {
		list := missing
		more := ""
		if len(list) > maxListed {
			list, more = list[:maxListed], fmt.Sprintf(", and %d more", len(missing)-maxListed)
		}
		reasons = append(reasons, fmt.Sprintf("%d planned point(s) have no result: %s%s", len(missing), "`"+strings.Join(list, "`, `")+"`", more))
	}
	measured := 0
	var partial []string
	for i := range run.Records {
		if r := &run.Records[i]; r.Kind == results.KindCollective && good(r) {
			measured++
			if r.MissingRounds() > 0 {
				partial = append(partial, fmt.Sprintf("`%s` (%d of %d)", r.Point, len(r.RoundMediansUs), r.Rounds))
			}
		}
	}
	if len(partial) > 0 {
		list, more := partial, ""
		if len(list) > maxListed {
			list, more = list[:maxListed], fmt.Sprintf(", and %d more", len(partial)-maxListed)
		}
		reasons = append(reasons, fmt.Sprintf("%d point(s) lack some of their rounds and are reported from the rounds they have: %s%s",
			len(partial), strings.Join(list, ", "), more))
	}
	inRounds := ""
	if n := maxRounds(run.Records); n > 1 {
		inRounds = fmt.Sprintf(" in %d rounds each (pooled)", n)
	}
	rp.incomplete = len(reasons) > 0
	if len(reasons) == 0 {
		rp.m.p("**Complete.** %d collective points measured%s, none failed.", measured, inRounds)
	} else {
		rp.m.p("**Incomplete.** %d collective points measured%s; read the results with that in mind:", measured, inRounds)
		for _, r := range reasons {
			rp.m.WriteString("- " + r + "\n")
		}
		rp.m.WriteString("\n")
	}
	rp.writeSkipped(skipped)
}

// sortFailed counts the run's failed points that hit an error and those
// that stopped short, and gathers what was skipped here: the plan's parts
// left out, then the reasons of points recorded as skipped.
func sortFailed(run *results.Run) (nErr, nInc int, skipped []string) {
	skipped = run.LeftOut()
	for _, r := range run.Failed() {
		switch {
		case isSkipped(&r):
			if why := strings.TrimPrefix(r.Error, skippedPrefix); !slices.Contains(skipped, why) {
				skipped = append(skipped, why)
			}
		case r.Error != "":
			nErr++
		default:
			nInc++
		}
	}
	return nErr, nInc, skipped
}

// writeSkipped lists what the plan named but this machine cannot run
// (nccl without a GPU): no failure of the run, but skipped here, each with
// why.
func (rp *report) writeSkipped(skipped []string) {
	if len(skipped) == 0 {
		return
	}
	rp.m.p("**Skipped here**, as this machine cannot run them:")
	for _, n := range skipped {
		rp.m.WriteString("- " + n + "\n")
	}
	rp.m.WriteString("\n")
}

// skippedPrefix begins the error of a point the sweep recorded as one this
// machine cannot run (a plan without skip_unavailable): no failure of the
// run, but a point skipped here.
const skippedPrefix = "skipped: "

func isSkipped(r *results.Record) bool { return strings.HasPrefix(r.Error, skippedPrefix) }

// readRun reads a run directory as reports and compare see it: each point
// measured in rounds merged into one record, its statistics recomputed from
// the pooled samples by the same code that summarised each round.
func readRun(dir string) (*results.Run, error) {
	run, err := results.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	run.Records = results.MergeRounds(run.Records, results.Fill)
	return run, nil
}

// maxRounds is the most rounds any collective point of recs was planned in.
func maxRounds(recs []results.Record) int {
	n := 1
	for i := range recs {
		if r := &recs[i]; r.Kind == results.KindCollective {
			_, of := r.RoundOf()
			n = max(n, of)
		}
	}
	return n
}

func (rp *report) writeFailed() error {
	var rows [][]string
	for _, r := range rp.run.Failed() {
		if isSkipped(&r) {
			continue // under Status, as skipped here
		}
		what := r.Error
		if what == "" {
			what = "incomplete: stopped before all iterations ran"
		}
		rows = append(rows, failedRow(&r, what))
	}
	for i := range rp.run.Records {
		if r := &rp.run.Records[i]; r.Wrong > 0 && r.Error == "" {
			rows = append(rows, failedRow(r, fmt.Sprintf("%d wrong element(s)", r.Wrong)))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	rp.m.h(2, "Failed points")
	t := &table{header: []string{"point", "kind", "strategy", "ranks", "size", "error"}, left: map[int]bool{1: true, 2: true, 5: true}}
	for _, row := range rows {
		t.add(row...)
	}
	return rp.m.table(t)
}

func failedRow(r *results.Record, what string) []string {
	name := r.Point
	if name == "" {
		name = results.BenchName(r)
	}
	kind := r.Kind
	if r.Collective != "" {
		kind = r.Collective
	}
	size := ""
	if r.Kind == results.KindCollective {
		size = results.FormatSize(r.Bytes)
	}
	np := ""
	if r.NP > 0 {
		np = fmt.Sprint(r.NP)
	}
	return []string{name, kind, seriesName(r), np, size, what}
}

// anchor is the GitHub-style heading anchor of a title.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writeFileAtomic replaces path with data so that a reader (a browser
// refreshing report.md during a sweep) never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("reports: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}
