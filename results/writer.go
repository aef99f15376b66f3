package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// File names inside a run directory.
const (
	FileName      = "results.jsonl" // the records, one JSON object a line
	BenchFileName = "results.bench" // the same samples in Go benchmark format, for benchstat
)

// Writer appends records to RUN_DIR/results.jsonl and their samples to
// RUN_DIR/results.bench. Every record is written with one write call and
// fsync'd before Write returns, so a run killed at any moment loses at most
// the record being written, and that one only as a truncated last line, which
// [Reader] skips. A Writer is safe for concurrent use.
type Writer struct {
	mu    sync.Mutex
	dir   string
	env   Env
	jsonl *os.File
	bench *benchWriter
	err   error // sticky: after a failed write the files may be torn
}

// NewWriter opens runDir's results for appending, creating the directory and
// files as needed, and writes an env record describing this session. When the
// files already exist (a resumed run) new records go after the old ones; a
// partial last line left by an interrupted run is cut off first, so that it
// cannot fuse with the next record, while a whole record that lost only its
// newline is kept. It refuses files written by a newer schema.
func NewWriter(runDir string, env Env) (*Writer, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return newWriter(filepath.Join(runDir, FileName), filepath.Join(runDir, BenchFileName), env)
}

// NewFileWriter is [NewWriter] for one JSON Lines file of the caller's naming
// and no results.bench: distbench run --json. Its records are those of a
// run directory (the env record first, the schema in every record), so that
// a file named DIR/results.jsonl makes DIR one that report and compare read.
func NewFileWriter(path string, env Env) (*Writer, error) {
	return newWriter(path, "", env)
}

// newWriter opens path, and benchPath unless it is "", for appending and
// writes env's record.
func newWriter(path, benchPath string, env Env) (*Writer, error) {
	if env.StartedAt.IsZero() {
		env.StartedAt = time.Now().UTC()
	}
	if err := checkSchema(path); err != nil {
		return nil, err
	}
	jsonl, err := openAppend(path, wholeRecord)
	if err != nil {
		return nil, err
	}
	w := &Writer{dir: filepath.Dir(path), env: env, jsonl: jsonl}
	if benchPath != "" {
		bench, err := openAppend(benchPath, nil)
		if err != nil {
			jsonl.Close()
			return nil, err
		}
		w.bench = newBenchWriter(bench, &w.env)
	}
	if err := w.Write(&Record{Kind: KindEnv, Env: &env}); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Dir is the run directory.
func (w *Writer) Dir() string { return w.dir }

// Write appends r to results.jsonl (setting r.Schema if unset) and, for a
// measured collective point with samples, its samples to results.bench.
func (w *Writer) Write(r *Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.jsonl == nil {
		return errors.New("results: write after Close")
	}
	if r.Schema == 0 {
		r.Schema = SchemaVersion
	}
	line, err := json.Marshal(r)
	if err != nil {
		// Nothing was written; the files are still good.
		return fmt.Errorf("results: encoding %s record %q: %w", r.Kind, r.Point, err)
	}
	line = append(line, '\n')
	if _, err := w.jsonl.Write(line); err != nil {
		w.err = fmt.Errorf("results: %w", err)
		return w.err
	}
	if err := w.jsonl.Sync(); err != nil {
		w.err = fmt.Errorf("results: %w", err)
		return w.err
	}
	if w.bench == nil {
		return nil
	}
	if err := w.bench.write(r); err != nil {
		w.err = fmt.Errorf("results: %s: %w", BenchFileName, err)
		return w.err
	}
	return nil
}

// Finish marks the run complete, by appending a copy of this session's env
// record with FinishedAt set, and closes the files. Call it only when the
// sweep ran to its end; on any other path call Close, so that readers see the
// run as interrupted.
func (w *Writer) Finish() error {
	env := w.env
	env.FinishedAt = time.Now().UTC()
	if err := w.Write(&Record{Kind: KindEnv, Env: &env}); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// Close closes the files. It is safe to call more than once, and after Finish.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.jsonl == nil {
		return nil
	}
	err := w.jsonl.Close()
	if w.bench != nil {
		if berr := w.bench.close(); err == nil {
			err = berr
		}
	}
	w.jsonl = nil
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// openAppend opens path for appending, creating it, and makes it end in a
// newline (repairTail), so that what is appended starts a line of its own.
func openAppend(path string, whole func(line []byte) bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if err := repairTail(f, whole); err != nil {
		f.Close()
		return nil, fmt.Errorf("results: repairing %s: %w", path, err)
	}
	return f, nil
}

// repairTail deals with a last line that has no newline. If whole says it
// is a whole record (as Reader reads it), only the newline was lost: the
// newline is added and the record kept, since a resumed sweep has already
// counted that point as done. Otherwise it is a record torn by a crash,
// which would make whatever is appended to it unreadable too: it is cut off.
// A nil whole cuts every such line (results.bench, whose lines cannot tell).
func repairTail(f *os.File, whole func(line []byte) bool) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == 0 {
		return nil
	}
	// Scan back in blocks for the last newline.
	const block = 64 << 10
	buf := make([]byte, block)
	lineStart := int64(0) // of the last line
	for end := size; end > 0; {
		start := max(end-block, 0)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil && err != io.EOF {
			return err
		}
		if end == size && b[len(b)-1] == '\n' {
			return nil // intact
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			lineStart = start + int64(i) + 1
			break
		}
		end = start
	}
	if whole != nil {
		last := make([]byte, size-lineStart)
		if _, err := f.ReadAt(last, lineStart); err != nil && err != io.EOF {
			return err
		}
		if whole(last) {
			_, err := f.Write([]byte{'\n'}) // O_APPEND: at the end
			return err
		}
	}
	return f.Truncate(lineStart)
}

// checkSchema refuses to append to a results file whose records come from a
// newer schema: mixing layouts in one file would make it unreadable to both.
func checkSchema(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	rd := NewReader(f)
	rd.name = path
	_, err = rd.Next()
	if err == io.EOF {
		return nil
	}
	return err
}
