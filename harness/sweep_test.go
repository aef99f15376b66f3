package harness

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/results"
	_ "github.com/distbench/distbench/strategies/ring"
)

// TestMain lets the test binary be its own worker. Sweeps need worker
// processes; rather than build cmd/distbench (a minute of a 2-core machine's
// time), the sweep tests start this binary, which Launch hands its job in
// DISTBENCH_SPEC, and it runs WorkerMain, as `distbench worker` does.
func TestMain(m *testing.M) {
	if os.Getenv(launch.EnvSpec) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := WorkerMain(ctx, os.Stdout, os.Getenv)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "distbench:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashBytes is the allreduce size at which testcrash's rank 1 dies.
const crashBytes = 8192

// testCrash is ring, except that rank 1 exits in the middle of an
// allreduce of crashBytes: a worker that dies mid-launch.
type testCrash struct{}

type crashComm struct{ collective.Comm }

func (c crashComm) AllReduce(ctx context.Context, t collective.Tensor, op collective.Op) error {
	if t.Bytes() == crashBytes && c.Rank() == 1 {
		os.Exit(3)
	}
	return c.Comm.AllReduce(ctx, t, op)
}

func (testCrash) New(ctx context.Context, cfg collective.Config) (collective.Comm, error) {
	c, err := collective.New(ctx, "ring", cfg)
	return crashComm{c}, err
}

// testUnavailable is a strategy that cannot run anywhere, as nccl cannot
// without a GPU.
type testUnavailable struct{}

func (testUnavailable) New(context.Context, collective.Config) (collective.Comm, error) {
	return nil, errors.New("unavailable")
}
func (testUnavailable) Available() error { return errors.New("no such device") }

func init() {
	collective.Register("testcrash", testCrash{})
	collective.Register("testunavailable", testUnavailable{})
}

func sweepOpts(t *testing.T, dir, src string) SweepOptions {
	t.Helper()
	p, err := plan.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return SweepOptions{Plan: exp, Dir: dir, Env: results.CaptureEnv(), Exe: os.Args[0], Stderr: io.Discard, Grace: 2 * time.Second}
}

const tinyPlan = `
iters: 5
warmup: 1
timeout: 20s
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce, allgather]
    sizes: [4KiB, 16KiB]
`

func TestSweepEndToEnd(t *testing.T) {
	dir := t.TempDir()
	o := sweepOpts(t, dir, tinyPlan)
	var out bytes.Buffer
	o.Progress = &logProgress{out: &out}
	res, err := Sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Measured != 4 || res.Planned != 4 {
		t.Fatalf("result %+v", res)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Complete() || len(run.Records) != 4 {
		t.Fatalf("finished %v, %d records, failed %v, missing %v", run.Finished, len(run.Records), run.Failed(), run.Missing())
	}
	if !strings.Contains(out.String(), "[4/4] allgather ring np=2 16KiB float32: ") {
		t.Errorf("progress:\n%s", out.String())
	}
	for _, r := range run.Records {
		if r.Wrong != 0 || len(r.SamplesUs) != 5 || r.BusBWGBs <= 0 {
			t.Errorf("%s: wrong %d, %d samples, busbw %v", r.Point, r.Wrong, len(r.SamplesUs), r.BusBWGBs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, PlanFileName)); err != nil {
		t.Errorf("no plan saved: %v", err)
	}
	if got := run.Env.Planned; len(got) != 4 {
		t.Errorf("planned %v", got)
	}

	// Resuming a finished run measures nothing again.
	o.Resume = true
	res, err = Sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != 4 || res.Measured != 0 {
		t.Errorf("resume of a finished run: %+v", res)
	}
}

func TestSweepFailedLaunchGoesOn(t *testing.T) {
	dir := t.TempDir()
	o := sweepOpts(t, dir, `
iters: 3
warmup: 0
timeout: 10s
collectives:
  - strategies: [testcrash, ring]
    np: [2]
    collectives: [allreduce]
    sizes: [4096, 8192, 16384]
  - strategies: [testunavailable]
    np: [2]
    collectives: [allreduce]
    sizes: [4096]
`)
	res, err := Sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || res.Measured != 4 || res.Failed != 2 || res.Skipped != 1 {
		t.Errorf("result %+v; want 4 measured (1 testcrash, 3 ring), 2 failed, 1 skipped", res)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Finished {
		t.Errorf("a sweep that went through its plan is finished, failures and all")
	}
	byPoint := map[string]results.Record{}
	for _, r := range run.Records {
		byPoint[fmt.Sprintf("%s/%d", r.Strategy, r.Bytes)] = r
	}
	for key, want := range map[string]string{
		"testcrash/4096": "", "testcrash/8192": "rank", "testcrash/16384": "not measured: the launch failed before reaching it",
		"ring/4096": "", "ring/8192": "", "ring/16384": "", "testunavailable/4096": "skipped: strategy testunavailable cannot run here",
	} {
		r, ok := byPoint[key]
		switch {
		case !ok:
			t.Errorf("%s: no record", key)
		case want == "" && r.Error != "":
			t.Errorf("%s: error %q", key, r.Error)
		case want != "" && !strings.Contains(r.Error, want):
			t.Errorf("%s: error %q, want it to contain %q", key, r.Error, want)
		}
	}
}

// logProgress writes what the sweep tells its Progress, a line each, as
// the CLI's line display does: "resuming: 1 of 4 done already", "round 2 of
// 3", "[1/12] allreduce ring np=2 4KiB float32 (round 1/3): ok".
type logProgress struct {
	out         io.Writer
	done, total int
}

func (l *logProgress) Start(total, done int) {
	l.total, l.done = total, done
	if done > 0 {
		fmt.Fprintf(l.out, "resuming: %d of %d done already\n", done, total)
	}
}
func (l *logProgress) Round(round, rounds int)      { fmt.Fprintf(l.out, "round %d of %d\n", round, rounds) }
func (l *logProgress) Measuring(*plan.PlannedPoint) {}
func (l *logProgress) Finished(p *plan.PlannedPoint, r *results.Record) {
	l.done++
	fmt.Fprintf(l.out, "[%d/%d] %s: %s\n", l.done, l.total, p.Label(), cmp.Or(r.Error, "ok"))
}
func (l *logProgress) Note(string)       {}
func (l *logProgress) Output() io.Writer { return io.Discard }
func (l *logProgress) Stop(bool)         {}

// stopAfter cancels the sweep once n points have finished.
type stopAfter struct {
	Progress
	n      int
	cancel context.CancelFunc
}

func (s *stopAfter) Finished(p *plan.PlannedPoint, r *results.Record) {
	s.Progress.Finished(p, r)
	if s.n--; s.n == 0 {
		s.cancel()
	}
}

func TestSweepInterruptedKeepsRecords(t *testing.T) {
	dir := t.TempDir()
	plan := `
iters: 5
warmup: 1
timeout: 20s
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce]
    sizes: {min: 4KiB, max: 4MiB, factor: 4}
`
	o := sweepOpts(t, dir, plan)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Progress = &stopAfter{Progress: &logProgress{out: io.Discard}, n: 2, cancel: cancel}
	res, err := Sweep(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	// Records already on their way when the sweep was stopped are kept:
	// two, or a few more.
	measured := res.Measured
	if !res.Interrupted || res.OK() || measured < 2 || measured >= res.Planned {
		t.Fatalf("result %+v", res)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Finished {
		t.Errorf("an interrupted run must not be marked finished")
	}
	good := 0
	for _, r := range run.Records {
		if r.Error == "" && !r.Incomplete {
			good++
		}
	}
	if good != measured || len(run.Missing())+res.Stopped == 0 {
		t.Errorf("%d good records, missing %v", good, run.Missing())
	}

	// --resume measures the rest, and only the rest.
	o = sweepOpts(t, dir, plan)
	o.Resume = true
	res, err = Sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != measured || res.Measured != res.Planned-measured || !res.OK() {
		t.Errorf("resume: %+v", res)
	}
	run, err = results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Complete() {
		t.Errorf("resumed run is not complete: failed %v, missing %v", run.Failed(), run.Missing())
	}
}

func TestTimeBudget(t *testing.T) {
	dir := t.TempDir()
	o := sweepOpts(t, dir, `
iters: 1000
warmup: 0
check: false
time_budget: 1ns
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce]
    sizes: [64KiB]
`)
	res, err := Sweep(context.Background(), o)
	if err != nil || !res.OK() {
		t.Fatalf("%+v, %v", res, err)
	}
	run, _ := results.ReadRun(dir)
	if r := run.Records[0]; r.Iters != job.MinBudgetIters || len(r.SamplesUs) != job.MinBudgetIters {
		t.Errorf("iters %d, %d samples; a budget this small leaves %d", r.Iters, len(r.SamplesUs), job.MinBudgetIters)
	}
}

func TestSweepTraining(t *testing.T) {
	mnist, _ := filepath.Abs("../data/mnist")
	if _, err := os.Stat(filepath.Join(mnist, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("no MNIST in %s (make data)", mnist)
	}
	dir := t.TempDir()
	// A training run is not repeated in rounds: it runs once.
	o := sweepOpts(t, dir, `
timeout: 1m
rounds: 2
training:
  - model: mlp
    dataset: mnist
    data_dir: `+mnist+`
    strategies: [ring]
    np: [2]
    steps: 3
    batch: 16
`)
	res, err := Sweep(context.Background(), o)
	if err != nil || !res.OK() || res.Measured != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	run, _ := results.ReadRun(dir)
	if len(run.Records) < 4 {
		t.Fatalf("%d records, want 3 steps and an epoch", len(run.Records))
	}
	id := o.Plan.IDs()[0]
	for i, r := range run.Records {
		want := ""
		if i == len(run.Records)-1 {
			want = id
		}
		if r.Round != 1 || r.Rounds != 1 {
			t.Errorf("record %d (%s): round %d of %d, want 1 of 1", i, r.Kind, r.Round, r.Rounds)
		}
		if r.Point != want {
			t.Errorf("record %d (%s): point %q, want %q (only a finished run's last record carries the id)", i, r.Kind, r.Point, want)
		}
	}
	if last := run.Records[len(run.Records)-1]; last.Kind != results.KindTrainEpoch || last.TestAcc <= 0 {
		t.Errorf("last record %+v", last)
	}
	if done, _ := results.Done(dir); !done[id] {
		t.Errorf("a finished training run is not done for --resume")
	}
}

// roundsPlan: two launches (ring and testcrash, which is ring at these
// sizes), two points each, in three rounds of 4, 3 and 3 iterations.
const roundsPlan = `
iters: 10
warmup: 1
timeout: 20s
rounds: 3
collectives:
  - strategies: [ring, testcrash]
    np: [2]
    collectives: [allreduce]
    sizes: [4KiB, 16KiB]
`

// TestSweepRounds: round 1 of every launch, then round 2, then round 3,
// each round of a point its own record, the iterations split across them;
// reports see one record a point, pooled.
func TestSweepRounds(t *testing.T) {
	dir := t.TempDir()
	o := sweepOpts(t, dir, roundsPlan)
	var out bytes.Buffer
	o.Progress = &logProgress{out: &out}
	res, err := Sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Planned != 4 || res.Measured != 4 || res.Rounds != 3 {
		t.Fatalf("result %+v", res)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Complete() || len(run.Records) != 12 {
		t.Fatalf("complete %v, %d records; want 12 (4 points × 3 rounds)", run.Complete(), len(run.Records))
	}
	var order []string
	wantIters := map[int]int{1: 4, 2: 3, 3: 3}
	for _, r := range run.Records {
		order = append(order, fmt.Sprintf("%d:%s", r.Round, r.Strategy))
		if r.Rounds != 3 || r.Iters != wantIters[r.Round] || len(r.SamplesUs) != r.Iters || r.Warmup != 1 {
			t.Errorf("%s round %d of %d: %d iters, %d samples, warmup %d", r.Point, r.Round, r.Rounds, r.Iters, len(r.SamplesUs), r.Warmup)
		}
	}
	want := []string{"1:ring", "1:ring", "1:testcrash", "1:testcrash", "2:ring", "2:ring", "2:testcrash", "2:testcrash",
		"3:ring", "3:ring", "3:testcrash", "3:testcrash"}
	if !slices.Equal(order, want) {
		t.Errorf("records in the order %v, want %v", order, want)
	}
	for _, s := range []string{"round 2 of 3\n", "[1/12] allreduce ring np=2 4KiB float32 (round 1/3): ", "[12/12] allreduce testcrash np=2 16KiB float32 (round 3/3): "} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("progress lacks %q:\n%s", s, out.String())
		}
	}
	merged := results.MergeRounds(run.Records, results.Fill)
	if len(merged) != 4 {
		t.Fatalf("%d merged records, want 4", len(merged))
	}
	for _, r := range merged {
		if len(r.SamplesUs) != 10 || len(r.RoundMediansUs) != 3 || r.Iters != 10 || r.MissingRounds() != 0 {
			t.Errorf("%s: %d samples, round medians %v, iters %d", r.Point, len(r.SamplesUs), r.RoundMediansUs, r.Iters)
		}
	}
}

// TestSweepRoundsResume: a sweep stopped in its second round, resumed,
// measures the rounds it lacks and nothing twice.
func TestSweepRoundsResume(t *testing.T) {
	dir := t.TempDir()
	plan := strings.Replace(roundsPlan, "[ring, testcrash]", "[ring]", 1) // one launch a round
	o := sweepOpts(t, dir, plan)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Progress = &stopAfter{Progress: &logProgress{out: io.Discard}, n: 3, cancel: cancel}
	res, err := Sweep(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.Measured != 0 || res.Stopped == 0 {
		t.Fatalf("interrupted in round 2: %+v; want no point measured in every round, some cut short", res)
	}
	first, err := results.DoneRounds(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) < 3 || len(first) >= 6 {
		t.Fatalf("%d rounds done before the interruption: %v", len(first), first)
	}

	o = sweepOpts(t, dir, plan)
	o.Resume = true
	var out bytes.Buffer
	o.Progress = &logProgress{out: &out}
	res, err = Sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Measured != 2 {
		t.Errorf("resume: %+v", res)
	}
	if want := fmt.Sprintf("resuming: %d of 6 done already", len(first)); !strings.Contains(out.String(), want) {
		t.Errorf("progress lacks %q:\n%s", want, out.String())
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Complete() {
		t.Errorf("resumed run is not complete: failed %v, missing %v", run.Failed(), run.Missing())
	}
	measured := map[results.PointRound]int{}
	for _, r := range run.Records {
		if r.Error == "" && !r.Incomplete {
			measured[results.PointRound{Point: r.Point, Round: r.Round}]++
		}
	}
	if len(measured) != 6 {
		t.Errorf("%d point rounds measured, want 6", len(measured))
	}
	for k, n := range measured {
		if n != 1 {
			t.Errorf("%v measured %d times", k, n)
		}
	}
}

// TestSweepResumeKeepsWholeLastRecord: a run directory whose last record
// lost only its final newline is resumed without losing that record: the
// point counts as done, and is neither measured again nor reported missing.
func TestSweepResumeKeepsWholeLastRecord(t *testing.T) {
	dir := t.TempDir()
	o := sweepOpts(t, dir, tinyPlan)
	// An interrupted session that recorded every point, its file then
	// damaged: the last record's newline gone.
	w, err := results.NewWriter(dir, results.Env{Planned: o.Plan.IDs()})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range o.Plan.Groups {
		for _, p := range g.Points {
			r := p.Record
			r.TimeUs, r.Wrong, r.SamplesUs = 10, 0, []float64{9, 10, 11}
			if err := w.Write(&r); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Close()
	path := filepath.Join(dir, results.FileName)
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, bytes.TrimSuffix(b, []byte("\n")), 0o644); err != nil {
		t.Fatal(err)
	}

	o.Resume = true
	res, err := Sweep(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != 4 || res.Measured != 0 || !res.OK() {
		t.Errorf("resume: %+v; want all 4 points resumed", res)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Records) != 4 || len(run.Missing()) != 0 || !run.Complete() {
		t.Errorf("after resuming: %d records, missing %v, complete %v; want the 4 records kept", len(run.Records), run.Missing(), run.Complete())
	}
}
