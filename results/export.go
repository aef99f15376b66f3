package results

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
)

// WriteBench writes run's collective samples in the Go benchmark format,
// as results.bench holds them for a sweep, for benchstat. Runs that have
// no results.bench (run --json, p2p --json) get one this way.
func WriteBench(w io.Writer, run *Run) error {
	env := run.Env
	if env == nil {
		env = &Env{}
	}
	b := newBenchStream(w, env)
	for i := range run.Records {
		if err := b.write(&run.Records[i]); err != nil {
			return err
		}
	}
	return nil
}

// CSVHeader is WriteCSV's first row. Times in microseconds, bandwidths in
// GB/s (1e9 bytes), as in results.jsonl; the name is results.bench's.
var CSVHeader = []string{
	"kind", "name", "collective", "strategy", "peer", "np", "bytes", "count", "dtype", "op", "root", "inplace",
	"link", "transport", "device", "round", "rounds", "iters",
	"time_us", "time_us_p95", "time_us_min", "time_us_max", "time_us_mean", "time_us_ci_lo", "time_us_ci_hi",
	"algbw_gbs", "busbw_gbs", "wrong",
	"model", "dataset", "mode", "epoch", "step", "loss", "test_acc", "images_per_s",
	"status", "error",
}

// WriteCSV writes one row per record of run (collective points, training
// steps and epochs, soak launches; not the environment), in file order,
// under CSVHeader. status is ok, incomplete or failed.
func WriteCSV(w io.Writer, run *Run) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for i := range run.Records {
		r := &run.Records[i]
		name := ""
		if r.Kind == KindCollective {
			name = BenchName(r)
		}
		status := "ok"
		switch {
		case r.Error != "":
			status = "failed"
		case r.Incomplete:
			status = "incomplete"
		}
		row := []string{
			r.Kind, name, r.Collective, r.Strategy, r.Peer, itoa(r.NP), i64(r.Bytes), i64(r.Count), r.DType, r.Op, itoa(r.Root), strconv.FormatBool(r.InPlace),
			r.Link, r.Transport, r.Device, itoa(r.Round), itoa(r.Rounds), itoa(r.Iters),
			f64(r.TimeUs), f64(r.TimeUsP95), f64(r.TimeUsMin), f64(r.TimeUsMax), f64(r.TimeUsMean), f64(r.TimeUsCILo), f64(r.TimeUsCIHi),
			f64(r.AlgBWGBs), f64(r.BusBWGBs), i64(r.Wrong),
			r.Model, r.Dataset, r.Mode, itoa(r.Epoch), itoa(r.Step), f64(r.Loss), f64(r.TestAcc), f64(r.ImagesPerS),
			status, strings.Join(strings.Fields(r.Error), " "),
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func itoa(v int) string    { return strconv.Itoa(v) }
func i64(v int64) string   { return strconv.FormatInt(v, 10) }
func f64(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
