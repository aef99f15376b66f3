package nccltests

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strings"
	"time"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// JSONVersion is the version of nccl-tests' -J document (its
// JSON_FILE_VERSION in src/util.cu) whose shape ncclDoc reproduces, so that
// the tools written for it (tools/analyze_perf_json.py) read distbench's.
const JSONVersion = 3

// Doc is nccl-tests' -J document: one JSON object with the run's
// arguments, configuration, devices and a result per row. It is rewritten
// whole after every row, so an interrupted run leaves a valid document
// with the rows it measured.
//
// Where nccl-tests' writer has quirks, they are kept, because parsers rely
// on them: its booleans are the strings "true" and "false", a root is a
// string padded to six characters, and a NaN is the string "nan".
type Doc struct {
	f    *os.File
	size int64 // bytes written by the last whole write
	end  int64 // where the results list's closing "]" goes; 0 before the first row
	err  error // the first failed write, reported by finish
	now  func() time.Time

	Version     int            `json:"version"`
	StartTime   string         `json:"start_time"`
	Args        []string       `json:"args"`
	Env         []string       `json:"env"`
	NCCLVersion int            `json:"nccl_version"`
	Distbench   *distbenchInfo `json:"distbench,omitempty"`
	Config      *ncclConfig    `json:"config,omitempty"`
	Results     []*ncclResult  `json:"results"`
	OutOfBounds *struct {
		Count int64  `json:"count"`
		Okay  string `json:"okay"`
	} `json:"out_of_bounds,omitempty"`
	AverageBusBandwidth *struct {
		Bandwidth jsonFloat `json:"bandwidth"`
		Okay      string    `json:"okay"`
	} `json:"average_bus_bandwidth,omitempty"`
	Errors *[]string `json:"errors,omitempty"` // [] once finished, as nccl-tests'

	EndTime string `json:"end_time,omitempty"`
}

// distbenchInfo is what distbench adds to the document: what nccl-tests'
// fields cannot say. nccl_version is 0: no NCCL ran unless the strategy
// is nccl.
type distbenchInfo struct {
	Version  string            `json:"version"`
	Strategy string            `json:"strategy"`
	NP       int               `json:"np"`
	Link     string            `json:"link,omitempty"`
	Options  map[string]string `json:"options,omitempty"`
	Time     string            `json:"time"` // what the time fields are, in words
}

type ncclConfig struct {
	NThreads      int      `json:"nthreads"`
	NGPUs         int      `json:"ngpus"`
	MinimumBytes  int64    `json:"minimum_bytes"`
	MaximumBytes  int64    `json:"maximum_bytes"`
	StepFactor    *float64 `json:"step_factor,omitempty"`
	StepBytes     *int64   `json:"step_bytes,omitempty"`
	WarmupIters   int      `json:"warmup_iters"`
	Iterations    int      `json:"iterations"`
	AggIterations int      `json:"aggregated_iterations"`
	Validation    int      `json:"validation"`
	Graph         int      `json:"graph"`
	Blocking      string   `json:"blocking_collectives"`
	PerIterTiming string   `json:"per_iter_timing"`
	PerIterSkip   int      `json:"per_iter_skip"`
	ParallelInit  string   `json:"parallel_init"`
	Devices       []device `json:"devices"`
}

type ncclResult struct {
	Size             int64        `json:"size"`
	Count            int64        `json:"count"`
	Type             string       `json:"type"`
	Redop            string       `json:"redop"`
	Root             string       `json:"root"`
	OutOfPlace       *ncclFigures `json:"out_of_place,omitempty"`
	OutOfPlacePerIt  *ncclPerIter `json:"out_of_place_per_iter,omitempty"`
	InPlace          *ncclFigures `json:"in_place,omitempty"`
	InPlacePerIter   *ncclPerIter `json:"in_place_per_iter,omitempty"`
	ActualIterations int          `json:"actual_iterations"`
	ExperimentName   string       `json:"experiment_name"`
	Error            string       `json:"error,omitempty"` // distbench's: the point failed
}

type ncclFigures struct {
	Time   jsonFloat  `json:"time"`
	AlgBW  jsonFloat  `json:"alg_bw"`
	BusBW  jsonFloat  `json:"bus_bw"`
	NWrong *jsonFloat `json:"nwrong"` // null when unchecked
}

type ncclPerIter struct {
	Skipped  int         `json:"skipped_iterations"`
	MinUs    jsonFloat   `json:"min_us"`
	MaxUs    jsonFloat   `json:"max_us"`
	AvgUs    jsonFloat   `json:"avg_us"`
	P50Us    jsonFloat   `json:"p50_us"`
	P95Us    jsonFloat   `json:"p95_us"`
	P99Us    jsonFloat   `json:"p99_us"`
	StdevUs  jsonFloat   `json:"stdev_us"`
	CVPct    jsonFloat   `json:"cv_pct"`
	TimesUs  []jsonFloat `json:"times_us"`
	PerRanks [][]float64 `json:"per_process_max_times_us,omitempty"`
}

// jsonFloat is a number as nccl-tests writes it: NaN (and, here, the
// infinities JSON cannot carry) as the string "nan".
type jsonFloat float64

func (v jsonFloat) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte(`"nan"`), nil
	}
	return json.Marshal(f)
}

func jsonBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// CreateDoc creates path as nccl-tests does: never over an existing
// file, but at the first free path.0, path.1, …; now is the start time.
// It returns the document and the path it took.
func CreateDoc(path string, args []string, now time.Time) (*Doc, string, error) {
	try := path
	for i := 0; ; i++ {
		f, err := os.OpenFile(try, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			d := &Doc{f: f, Version: JSONVersion, StartTime: now.Format(TimestampLayout), Args: args, Env: docEnv(os.Environ()), Results: []*ncclResult{}}
			return d, try, d.write()
		}
		if !errors.Is(err, fs.ErrExist) || i == 1000 {
			return nil, "", err
		}
		try = fmt.Sprintf("%s.%d", path, i)
	}
}

// docEnv is the environment the document records. nccl-tests records all of
// it; distbench records the variables that shape a run (NCCL's, CUDA's, the
// launchers' and its own) and never a value whose name suggests a secret,
// since results files are shared.
func docEnv(environ []string) []string {
	prefixes := []string{"NCCL_", "CUDA_", "DISTBENCH_", "OMPI_", "PMI_", "PMIX_", "SLURM_", "MASTER_", "TORCHELASTIC_",
		"WORLD_SIZE=", "RANK=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "GOMAXPROCS=", "GOGC=", "HOSTNAME="}
	out := []string{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name)
		if strings.Contains(upper, "TOKEN") || strings.Contains(upper, "SECRET") || strings.Contains(upper, "PASSWORD") || strings.Contains(upper, "KEY") {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				out = append(out, kv)
				break
			}
		}
	}
	return out
}

func (d *Doc) configure(cfg Config, first *results.Record) {
	c := &ncclConfig{NThreads: 1, NGPUs: 1, MinimumBytes: cfg.MinBytes, MaximumBytes: cfg.MaxBytes, WarmupIters: cfg.Warmup, Iterations: cfg.Iters,
		AggIterations: 1, Blocking: jsonBool(false), PerIterTiming: jsonBool(cfg.PerIter), PerIterSkip: cfg.PerIterSkip,
		ParallelInit: jsonBool(false), Devices: devices(first, cfg.NP, cfg.Env), Validation: cfg.CheckRuns}
	if cfg.StepBytes > 0 {
		c.StepBytes = &cfg.StepBytes
	} else {
		c.StepFactor = &cfg.StepFactor
	}
	d.Config = c
	d.now = cfg.Now
	d.Distbench = &distbenchInfo{Version: cfg.Version, Strategy: cfg.Strategy, NP: cfg.NP, Link: cfg.Link, Options: cfg.Options, Time: TimeDefinition(cfg.Average)}
}

// result starts the document's entry for the row of r.
func (d *Doc) result(r *results.Record, typ, op string) *ncclResult {
	return &ncclResult{Size: r.Bytes, Count: Count(r), Type: typ, Redop: op, Root: fmt.Sprintf("%6d", r.Root), ActualIterations: r.Iters}
}

// set fills one side of e from its record and the figures the table printed.
func (e *ncclResult) set(inPlace bool, r *results.Record, fig figures, checked, perIter bool, it stats.IterStats) {
	f := &ncclFigures{Time: jsonFloat(fig.timeUs), AlgBW: jsonFloat(fig.algbw), BusBW: jsonFloat(fig.busbw)}
	if checked {
		w := jsonFloat(max(r.Wrong, 0))
		f.NWrong = &w
	}
	var p *ncclPerIter
	if perIter {
		p = &ncclPerIter{Skipped: it.Skipped, MinUs: jsonFloat(it.Min), MaxUs: jsonFloat(it.Max), AvgUs: jsonFloat(it.Avg),
			P50Us: jsonFloat(it.P50), P95Us: jsonFloat(it.P95), P99Us: jsonFloat(it.P99), StdevUs: jsonFloat(it.Stdev), CVPct: jsonFloat(it.CVPct)}
		p.TimesUs = make([]jsonFloat, len(r.SamplesUs))
		for i, v := range r.SamplesUs {
			p.TimesUs[i] = jsonFloat(v)
		}
		if len(r.RankSamplesUs) > 1 {
			p.PerRanks = r.RankSamplesUs
		}
	}
	if inPlace {
		e.InPlace, e.InPlacePerIter = f, p
	} else {
		e.OutOfPlace, e.OutOfPlacePerIt = f, p
	}
	e.ActualIterations = r.Iters
}

// add appends e to the document on disk. Only the new row and the
// closing "]}" are written, so a long health loop (-N 0) costs each row its
// own bytes, not the whole document again.
func (d *Doc) add(e *ncclResult) {
	d.Results = append(d.Results, e)
	if d.err != nil {
		return
	}
	if d.end == 0 {
		// The whole document, once: it ends in this row's "}]}" (every
		// field after results is empty until finish), and later rows
		// go before its "]}".
		d.err = d.write()
		d.end = d.size - int64(len("]}\n"))
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		d.err = err
		return
	}
	b = append([]byte{','}, b...)
	if _, err := d.f.WriteAt(append(b, "]}\n"...), d.end); err != nil {
		d.err = err
		return
	}
	d.end += int64(len(b))
}

func (d *Doc) finish(wrong int64, avg, minBW float64, bwChecked bool, runErr error) error {
	d.OutOfBounds = &struct {
		Count int64  `json:"count"`
		Okay  string `json:"okay"`
	}{wrong, jsonBool(wrong == 0)}
	okay := "unchecked"
	if bwChecked {
		okay = jsonBool(avg >= minBW*0.9)
	}
	d.AverageBusBandwidth = &struct {
		Bandwidth jsonFloat `json:"bandwidth"`
		Okay      string    `json:"okay"`
	}{jsonFloat(avg), okay}
	errs := []string{}
	if runErr != nil {
		errs = append(errs, runErr.Error())
	}
	d.Errors = &errs
	now := d.now
	if now == nil { // finished before any row: configure never ran
		now = time.Now
	}
	d.EndTime = now().Format(TimestampLayout)
	err := d.write()
	if d.err != nil {
		err = d.err
	}
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (d *Doc) write() error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := d.f.Truncate(0); err != nil {
		return err
	}
	_, err = d.f.WriteAt(b, 0)
	d.size = int64(len(b))
	return err
}
