package results

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var testEnv = Env{Host: "h", CPUModel: "Test CPU 9000", Cores: 2, MemBytes: 1 << 30, Kernel: "Linux 6 x86_64",
	GoVersion: "go1.26", Commit: "abc123", StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

func point(id string, np int, samples ...float64) *Record {
	return &Record{Kind: KindCollective, Point: id, Collective: "allreduce", Strategy: "ring", NP: np,
		Bytes: 1 << 20, DType: "float32", Op: "sum", InPlace: true, TimeUs: samples[len(samples)/2],
		SamplesUs: samples, AlgBWGBs: 1, BusBWGBs: 1.5}
}

func TestWriterRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	env := testEnv
	env.Planned = []string{"a", "b", "c", "d"}
	w, err := NewWriter(dir, env)
	if err != nil {
		t.Fatal(err)
	}
	recs := []*Record{
		point("a", 2, 100, 110, 120),
		{Kind: KindCollective, Point: "b", Collective: "allreduce", Strategy: "tree", NP: 2, Error: "tree: rank 1 (127.0.0.1:4000) closed the connection"},
		{Kind: KindCollective, Point: "c", Collective: "allreduce", Strategy: "ps", NP: 2, Incomplete: true, SamplesUs: []float64{5}},
		{Kind: KindTrainStep, Point: "", Model: "mlp", Step: 1, Loss: 2.3},
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Write(point("z", 2, 1)); err == nil {
		t.Errorf("Write after Close succeeded")
	}

	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Env == nil || run.Env.CPUModel != "Test CPU 9000" || len(run.Envs) != 2 {
		t.Fatalf("env %+v, %d env records", run.Env, len(run.Envs))
	}
	if !run.Finished || run.Truncated {
		t.Errorf("Finished %v Truncated %v, want true false", run.Finished, run.Truncated)
	}
	if len(run.Records) != len(recs) {
		t.Fatalf("read %d records, want %d", len(run.Records), len(recs))
	}
	for i, r := range run.Records {
		if r.Schema != SchemaVersion || r.Kind != recs[i].Kind || r.Point != recs[i].Point {
			t.Errorf("record %d = %+v", i, r)
		}
	}
	if got := run.Failed(); len(got) != 2 || got[0].Point != "b" || got[1].Point != "c" {
		t.Errorf("Failed() = %v", got)
	}
	if got := run.Missing(); !slices.Equal(got, []string{"d"}) {
		t.Errorf("Missing() = %v, want [d]", got)
	}
	if run.Complete() {
		t.Errorf("Complete() = true with failures")
	}
	done, err := Done(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || !done["a"] {
		t.Errorf("Done = %v, want only a", done)
	}
}

func TestDoneWithoutResults(t *testing.T) {
	done, err := Done(filepath.Join(t.TempDir(), "nothing-yet"))
	if err != nil || len(done) != 0 {
		t.Errorf("Done = %v, %v; want empty, nil", done, err)
	}
}

// A resumed run appends after an interrupted one: the torn record is cut, the
// retried point counts as done, and the run is finished only if the last
// session finished.
func TestWriterResume(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(point("a", 2, 1, 2, 3))
	w.Write(&Record{Kind: KindCollective, Point: "b", Error: "boom"})
	w.Close() // interrupted: no Finish
	path := filepath.Join(dir, FileName)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"schema":1,"kind":"collective","point":"c","samples_us":[1,2`) // the crash
	f.Close()

	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Truncated || run.Finished || len(run.Records) != 2 {
		t.Fatalf("interrupted run: truncated %v finished %v records %d", run.Truncated, run.Finished, len(run.Records))
	}

	w, err = NewWriter(dir, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(point("b", 2, 4, 5, 6))
	w.Write(point("c", 2, 4, 5, 6))
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	run, err = ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Truncated || !run.Finished || len(run.Records) != 4 || len(run.Envs) != 3 {
		t.Fatalf("resumed run: truncated %v finished %v records %d envs %d", run.Truncated, run.Finished, len(run.Records), len(run.Envs))
	}
	if len(run.Failed()) != 0 {
		t.Errorf("Failed() = %v, want none after the retry succeeded", run.Failed())
	}
	done, _ := Done(dir)
	if len(done) != 3 {
		t.Errorf("Done = %v, want a b c", done)
	}
}

func TestReader(t *testing.T) {
	const (
		env  = `{"schema":1,"kind":"env","env":{"host":"h","cpu_model":"c","cores":1,"mem_bytes":1,"kernel":"k","go_version":"g","commit":"x","started_at":"2026-01-01T00:00:00Z"}}`
		rec  = `{"schema":1,"kind":"collective","point":"p","bytes":4,"count":1,"root":0,"inplace":true,"time_us":3,"time_us_p95":4,"algbw_gbs":0,"busbw_gbs":0,"wrong":0}`
		v2   = `{"schema":2,"kind":"collective","bytes":"a string now"}`
		none = `{"kind":"collective"}`
	)
	tests := []struct {
		name      string
		in        string
		records   int
		truncated bool
		err       string
		schemaErr bool
	}{
		{name: "clean", in: env + "\n" + rec + "\n", records: 2},
		{name: "last line without newline but whole", in: env + "\n" + rec, records: 2},
		{name: "torn last line", in: env + "\n" + rec + "\n" + rec[:40], records: 2, truncated: true},
		{name: "blank lines", in: "\n" + env + "\n\n" + rec + "\n\n", records: 2},
		{name: "damage in the middle", in: env + "\n" + rec[:40] + "\n" + rec + "\n", records: 1, err: "line 2"},
		{name: "newer schema", in: env + "\n" + v2 + "\n", records: 1, err: "schema 2 is newer than this distbench understands (1)", schemaErr: true},
		{name: "no schema", in: none + "\n", err: "no schema version", schemaErr: true},
		{name: "empty", in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := NewReader(strings.NewReader(tt.in))
			n := 0
			var err error
			for {
				var r *Record
				r, err = rd.Next()
				if err != nil {
					break
				}
				n++
				_ = r
			}
			if err == io.EOF {
				err = nil
			}
			if n != tt.records {
				t.Errorf("read %d records, want %d", n, tt.records)
			}
			if rd.Truncated() != tt.truncated {
				t.Errorf("Truncated() = %v, want %v", rd.Truncated(), tt.truncated)
			}
			if tt.err == "" && err != nil {
				t.Errorf("error %v", err)
			}
			if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("error %v, want one containing %q", err, tt.err)
			}
			var se *SchemaError
			if errors.As(err, &se) != tt.schemaErr {
				t.Errorf("errors.As(%v, *SchemaError) = %v, want %v", err, !tt.schemaErr, tt.schemaErr)
			}
		})
	}
}

func TestWriterRefusesNewerSchema(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileName), []byte(`{"schema":99,"kind":"env","env":{}}`+"\n"), 0o644)
	_, err := NewWriter(dir, testEnv)
	var se *SchemaError
	if !errors.As(err, &se) || se.Schema != 99 {
		t.Fatalf("NewWriter over a schema-99 file: %v, want a SchemaError", err)
	}
	if _, err := ReadRun(dir); !errors.As(err, &se) {
		t.Fatalf("ReadRun: %v, want a SchemaError", err)
	}
}

func TestWriterConcurrent(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 10 {
				if err := w.Write(point(fmt.Sprintf("g%d-%d", g, i), 2, 1, 2, 3)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	w.Finish()
	done, err := Done(dir)
	if err != nil || len(done) != 40 {
		t.Errorf("Done: %d points, %v; want 40", len(done), err)
	}
}

// TestRepairTail: before appending, a last line without a newline is cut if
// it is torn, and kept, newline added, if it is a whole record; a
// results.bench line (whole nil) is always cut, as its lines cannot tell.
func TestRepairTail(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than one scan block
	rec := `{"schema":1,"kind":"collective","point":"p","samples_us":[1,2,3]}`
	longRec := `{"schema":1,"kind":"collective","point":"` + long + `"}`
	tests := []struct {
		name, in, want string
		whole          func([]byte) bool
	}{
		{"empty", "", "", wholeRecord},
		{"intact", "a\nb\n", "a\nb\n", wholeRecord},
		{"torn after a line", "a\nb", "a\n", wholeRecord},
		{"torn only line", "torn", "", wholeRecord},
		{"torn long line", "a\n" + long, "a\n", wholeRecord},
		{"torn after a long line", long + "\n" + long, long + "\n", wholeRecord},
		{"torn record", rec + "\n" + rec[:40], rec + "\n", wholeRecord},
		{"whole record without newline", rec + "\n" + rec, rec + "\n" + rec + "\n", wholeRecord},
		{"whole only record without newline", rec, rec + "\n", wholeRecord},
		{"whole long record without newline", rec + "\n" + longRec, rec + "\n" + longRec + "\n", wholeRecord},
		{"whole record, then spaces", rec + "  ", rec + "  \n", wholeRecord},
		{"spaces only", rec + "\n  ", rec + "\n", wholeRecord},
		{"bench line", "BenchmarkX 1 2 ns/op\nBenchmarkX 1 3 ns/", "BenchmarkX 1 2 ns/op\n", nil},
		{"bench keeps nothing unterminated", rec, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			os.WriteFile(path, []byte(tt.in), 0o644)
			f, err := openAppend(path, tt.whole)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			got, _ := os.ReadFile(path)
			if string(got) != tt.want {
				t.Errorf("%d bytes became %d, want %d: %.60q", len(tt.in), len(got), len(tt.want), got)
			}
		})
	}
}

// A run whose last record lost only its newline keeps that record when a
// resumed session appends: Done counts the point before the writer opens
// the file and after, and the records that follow stay readable.
func TestWriterKeepsWholeLastRecord(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(point("a", 2, 1, 2, 3))
	w.Write(point("b", 2, 4, 5, 6))
	w.Close() // interrupted
	path := filepath.Join(dir, FileName)
	b, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.TrimSuffix(b, []byte("\n")), 0o644) // the damage

	before, err := Done(dir)
	if err != nil || !before["a"] || !before["b"] {
		t.Fatalf("Done before resuming = %v, %v; want a and b", before, err)
	}
	w, err = NewWriter(dir, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(point("c", 2, 7, 8, 9))
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	var points []string
	for _, r := range run.Records {
		points = append(points, r.Point)
	}
	if !slices.Equal(points, []string{"a", "b", "c"}) || run.Truncated || !run.Finished {
		t.Errorf("after resuming: records %v, truncated %v, finished %v; want a b c, whole and finished", points, run.Truncated, run.Finished)
	}
}

// TestLeftOut: what each session's plan left out, each once, in order.
func TestLeftOut(t *testing.T) {
	dir := t.TempDir()
	for _, left := range [][]string{{"peer mpi: not installed", "dataset mnist: not found"}, {"dataset mnist: not found", "strategy nccl: no GPU"}} {
		w, err := NewWriter(dir, Env{LeftOut: left})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"peer mpi: not installed", "dataset mnist: not found", "strategy nccl: no GPU"}
	if got := run.LeftOut(); !slices.Equal(got, want) {
		t.Errorf("LeftOut() = %q, want %q", got, want)
	}
}

// TestFileWriter: distbench run --json's file reads as a run directory's
// results.jsonl, and no results.bench appears beside it.
func TestFileWriter(t *testing.T) {
	dir := t.TempDir()
	env := testEnv
	env.Planned = []string{"a"}
	w, err := NewFileWriter(filepath.Join(dir, FileName), env)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(point("a", 2, 100, 110, 120)); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Env == nil || len(run.Envs) != 2 || len(run.Records) != 1 || run.Records[0].Schema != SchemaVersion || !run.Complete() {
		t.Errorf("env %+v, %d env records, records %+v, complete %v", run.Env, len(run.Envs), run.Records, run.Complete())
	}
	if _, err := os.Stat(filepath.Join(dir, BenchFileName)); !os.IsNotExist(err) {
		t.Errorf("%s beside the file: %v", BenchFileName, err)
	}
}
