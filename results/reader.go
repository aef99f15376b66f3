package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// SchemaError reports a record written by a newer (or no) schema than this
// build understands.
type SchemaError struct {
	File   string // "" when not read from a file
	Line   int
	Schema int // the record's schema; 0 when it has none
}

func (e *SchemaError) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.File != "" {
		where = e.File + ":" + fmt.Sprint(e.Line)
	}
	if e.Schema == 0 {
		return fmt.Sprintf("results: %s: record has no schema version; not a distbench results file?", where)
	}
	return fmt.Sprintf("results: %s: record schema %d is newer than this distbench understands (%d); use a newer distbench to read it",
		where, e.Schema, SchemaVersion)
}

// Reader reads records from a results.jsonl stream.
//
// A last line without a newline that does not parse is the record a crash
// interrupted: Reader drops it, reports it through Truncated, and ends with
// io.EOF as usual, so that a report can still be made from the rest. A bad
// line anywhere else is an error, because it means the file is damaged, not
// merely cut short.
type Reader struct {
	br        *bufio.Reader
	name      string
	line      int
	truncated bool
}

// NewReader returns a Reader reading from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 256<<10)}
}

// Next returns the next record, or io.EOF after the last one. Blank lines are
// skipped.
func (r *Reader) Next() (*Record, error) {
	for {
		// ReadBytes, not a Scanner: a line holding thousands of samples
		// can be longer than any fixed token limit.
		line, err := r.br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return nil, io.EOF
		}
		if err != nil && err != io.EOF {
			return nil, r.errorf("%v", err)
		}
		r.line++
		last := err == io.EOF // no newline: the final, possibly torn, line
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		// The schema is checked before the record is decoded as ours: a
		// newer layout may not even decode, and its error would hide the
		// real reason.
		var probe recordProbe
		if jerr := json.Unmarshal(line, &probe); jerr != nil {
			if last {
				r.truncated = true
				return nil, io.EOF
			}
			return nil, r.errorf("%v", jerr)
		}
		if probe.Schema < 1 || probe.Schema > SchemaVersion {
			return nil, &SchemaError{File: r.name, Line: r.line, Schema: probe.Schema}
		}
		var rec Record
		if jerr := json.Unmarshal(line, &rec); jerr != nil {
			return nil, r.errorf("%v", jerr)
		}
		return &rec, nil
	}
}

// recordProbe is the first look at a line: is it a JSON object, and of
// which schema.
type recordProbe struct {
	Schema int `json:"schema"`
}

// wholeRecord reports whether line, a last line without its newline, is one
// that Next returns rather than drops as torn: Writer keeps exactly those
// when it appends to the file, so reader and writer agree on what a resumed
// run has.
func wholeRecord(line []byte) bool {
	var probe recordProbe
	line = bytes.TrimSpace(line)
	return len(line) > 0 && json.Unmarshal(line, &probe) == nil
}

// Truncated reports whether the stream ended in a torn record that Next
// dropped.
func (r *Reader) Truncated() bool { return r.truncated }

func (r *Reader) errorf(format string, args ...any) error {
	where := fmt.Sprintf("line %d", r.line)
	if r.name != "" {
		where = r.name + ":" + fmt.Sprint(r.line)
	}
	return fmt.Errorf("results: %s: %s", where, fmt.Sprintf(format, args...))
}

// Run is everything read from one run directory.
type Run struct {
	Dir string
	// Env is the first session's environment; Envs holds every env record
	// in file order (a resumed run has one per session, and a finished
	// session a second one with FinishedAt set).
	Env  *Env
	Envs []*Env
	// Records are the non-env records, in file order.
	Records []Record
	// Truncated is set when the file ended in a torn record.
	Truncated bool
	// Finished is set when the last session called Writer.Finish: the last
	// env record has FinishedAt and nothing was written after it.
	Finished bool
}

// ReadRun reads RUN_DIR/results.jsonl.
func ReadRun(runDir string) (*Run, error) {
	return readRun(runDir, filepath.Join(runDir, FileName))
}

// ReadRunFile reads a results file by any name (run --json FILE), as the
// run its directory holds.
func ReadRunFile(path string) (*Run, error) { return readRun(filepath.Dir(path), path) }

func readRun(runDir, path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	rd := NewReader(f)
	rd.name = path
	run := &Run{Dir: runDir}
	lastWasFinish := false
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if rec.Kind == KindEnv {
			if rec.Env == nil {
				return nil, rd.errorf("env record without env")
			}
			if run.Env == nil {
				run.Env = rec.Env
			}
			run.Envs = append(run.Envs, rec.Env)
			lastWasFinish = !rec.Env.FinishedAt.IsZero()
			continue
		}
		run.Records = append(run.Records, *rec)
		lastWasFinish = false
	}
	run.Truncated = rd.Truncated()
	run.Finished = lastWasFinish && !run.Truncated
	return run, nil
}

// ok reports whether r is a finished measurement: a point, training step or
// epoch that neither failed nor stopped short.
func ok(r *Record) bool { return r.Error == "" && !r.Incomplete }

// PointRound names one round of one point: Record.Point and the round
// from Record.RoundOf.
type PointRound struct {
	Point string
	Round int
}

// Done returns the ids (Record.Point) of the points runDir has finished
// without error, in every one of their rounds, for --resume: those can be
// skipped, and everything else, failed points included, measured again. A
// run directory without results is not an error: nothing is done yet.
func Done(runDir string) (map[string]bool, error) {
	rounds, of, err := doneRounds(runDir)
	if err != nil {
		return nil, err
	}
	done := map[string]bool{}
	for id, n := range of {
		all := true
		for r := 1; r <= n && all; r++ {
			all = rounds[PointRound{id, r}]
		}
		if all {
			done[id] = true
		}
	}
	return done, nil
}

// DoneRounds returns the rounds of points that runDir has finished without
// error, for a --resume of a sweep measured in rounds: a round already
// recorded is not measured again. Records without round fields are round 1.
func DoneRounds(runDir string) (map[PointRound]bool, error) {
	rounds, _, err := doneRounds(runDir)
	return rounds, err
}

// doneRounds returns the rounds finished without error and, for every
// point with such a round, how many rounds its records say it has.
func doneRounds(runDir string) (map[PointRound]bool, map[string]int, error) {
	done, of := map[PointRound]bool{}, map[string]int{}
	run, err := ReadRun(runDir)
	if errors.Is(err, os.ErrNotExist) {
		return done, of, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for i := range run.Records {
		r := &run.Records[i]
		if r.Point == "" || !ok(r) {
			continue
		}
		round, n := r.RoundOf()
		done[PointRound{r.Point, round}] = true
		of[r.Point] = max(of[r.Point], n)
	}
	return done, of, nil
}

// Failed returns the records of points that failed or stopped short, except
// those a later record of the same point measured successfully (a resumed run
// retries them). Rounds are told apart: a failed round is listed unless the
// same round of the point was measured.
func (run *Run) Failed() []Record {
	good := map[PointRound]bool{}
	key := func(r *Record) PointRound {
		round, _ := r.RoundOf()
		return PointRound{r.Point, round}
	}
	for i := range run.Records {
		if r := &run.Records[i]; r.Point != "" && ok(r) {
			good[key(r)] = true
		}
	}
	var failed []Record
	for _, r := range run.Records {
		if !ok(&r) && (r.Point == "" || !good[key(&r)]) {
			failed = append(failed, r)
		}
	}
	return failed
}

// Missing returns the planned points (Env.Planned, from every session) that
// have no record at all, sorted.
func (run *Run) Missing() []string {
	seen := map[string]bool{}
	for i := range run.Records {
		seen[run.Records[i].Point] = true
	}
	var missing []string
	for _, e := range run.Envs {
		for _, p := range e.Planned {
			if !seen[p] {
				missing = append(missing, p)
				seen[p] = true
			}
		}
	}
	slices.Sort(missing)
	return missing
}

// LeftOut returns what the plan named but the machine could not run, from
// every session, each once, in the order first written.
func (run *Run) LeftOut() []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range run.Envs {
		for _, n := range e.LeftOut {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// Complete reports whether the run finished and every point in it succeeded.
func (run *Run) Complete() bool {
	return run.Finished && len(run.Failed()) == 0 && len(run.Missing()) == 0
}
