package results

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"
)

// benchWriter mirrors collective records into results.bench, the Go
// benchmark format (golang.org/design/14313-benchmark-format), so that
// `benchstat old/results.bench new/results.bench` compares two runs the way Go
// users compare `go test -bench` outputs. Each sample is its own line with
// iteration count 1: benchstat wants the distribution, not a mean.
type benchWriter struct {
	f       *os.File
	w       *benchfmt.Writer
	config  []benchfmt.Config
	started bool
}

// Custom units. "better=higher" metadata lines tell benchstat that a drop in
// bandwidth is a regression; it knows that of ns/op already. Bandwidths are
// in bytes per second, unscaled, as Go's MB/s becomes once benchstat tidies
// it: benchstat picks the prefix itself (binary, 1.54Gi for 1.65 GB/s), where
// a pre-scaled GB/s came out as "165.5m busbw-GB/s" below 1 GB/s.
const (
	unitTime  = "ns/op"
	unitBusBW = "busbw-B/s"
	unitAlgBW = "algbw-B/s"
)

// newBenchWriter writes to f, syncing it after each record.
func newBenchWriter(f *os.File, env *Env) *benchWriter {
	b := newBenchStream(f, env)
	b.f = f
	return b
}

// newBenchStream writes to w, which is not synced.
func newBenchStream(w io.Writer, env *Env) *benchWriter {
	config := []benchfmt.Config{
		{Key: "goos", Value: []byte(runtime.GOOS), File: true},
		{Key: "goarch", Value: []byte(runtime.GOARCH), File: true},
		{Key: "cpu", Value: []byte(oneLine(env.CPUModel)), File: true},
		{Key: "commit", Value: []byte(oneLine(env.Commit)), File: true},
	}
	return &benchWriter{w: benchfmt.NewWriter(w), config: config}
}

// write appends r's samples. Only successful collective points have a
// distribution worth comparing; everything else is skipped.
func (b *benchWriter) write(r *Record) error {
	if r.Kind != KindCollective || !ok(r) || len(r.SamplesUs) == 0 {
		return nil
	}
	if !b.started {
		for _, u := range []string{unitBusBW, unitAlgBW} {
			m := &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: u, Key: "better"}, OrigUnit: u, Value: "higher"}
			if err := b.w.Write(m); err != nil {
				return err
			}
		}
		b.started = true
	}
	// The bus/alg ratio comes from the record itself rather than from the
	// collective's name, so that this package needs no bandwidth rules and
	// peers that report their own busbw keep their convention.
	busPerAlg := 0.0
	if r.AlgBWGBs > 0 {
		busPerAlg = r.BusBWGBs / r.AlgBWGBs
	}
	res := &benchfmt.Result{Config: b.config, Name: benchfmt.Name(BenchName(r)), Iters: 1}
	for _, us := range r.SamplesUs {
		res.Values = res.Values[:0]
		res.Values = append(res.Values, benchfmt.Value{Value: us * 1e3, Unit: unitTime})
		if r.Bytes > 0 && us > 0 {
			algbw := float64(r.Bytes) / (us / 1e6) // bytes/s
			res.Values = append(res.Values,
				benchfmt.Value{Value: algbw * busPerAlg, Unit: unitBusBW},
				benchfmt.Value{Value: algbw, Unit: unitAlgBW})
		}
		if err := b.w.Write(res); err != nil {
			return err
		}
	}
	if b.f == nil {
		return nil
	}
	return b.f.Sync()
}

func (b *benchWriter) close() error { return b.f.Close() }

// BenchName is r's benchmark name in results.bench, without the "Benchmark"
// prefix: the collective, then key=value parts benchstat can group by, e.g.
// "AllReduce/strategy=ring/np=4/bytes=16MiB/dtype=float32". Parts that hold
// their default value (op=sum, out of place, root 0 or none, no link) are left out to
// keep names short; anything that tells two points apart is in.
func BenchName(r *Record) string {
	var b strings.Builder
	b.WriteString(collectiveTitle(r.Collective))
	part := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "/%s=%s", k, nameValue(v))
		}
	}
	part("strategy", r.Strategy)
	part("peer", r.Peer)
	part("np", fmt.Sprint(r.NP))
	part("bytes", FormatSize(r.Bytes))
	part("dtype", r.DType)
	if r.Op != "sum" {
		part("op", r.Op)
	}
	if r.InPlace {
		part("inplace", "true")
	}
	// Root -1 is a collective without one (allreduce, allgather, ...).
	if r.Root > 0 {
		part("root", fmt.Sprint(r.Root))
	}
	part("link", r.Link)
	keys := make([]string, 0, len(r.Options))
	for k := range r.Options {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		part(nameValue(k), r.Options[k])
	}
	return b.String()
}

var collectiveTitles = map[string]string{
	"allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter",
	"alltoall": "AllToAll", "broadcast": "Broadcast", "reduce": "Reduce", "sendrecv": "SendRecv",
	"gather": "Gather", "scatter": "Scatter", "barrier": "Barrier", "send": "Send", "recv": "Recv",
}

func collectiveTitle(c string) string {
	if t, ok := collectiveTitles[strings.ToLower(c)]; ok {
		return t
	}
	if c == "" {
		return "Unknown"
	}
	return strings.ToUpper(c[:1]) + nameValue(c[1:])
}

// nameValue makes v safe inside a benchmark name: no spaces (they end the
// name) and no slashes (they separate parts).
func nameValue(v string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\n', '\r', '/':
			return '_'
		}
		return r
	}, v)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// FormatSize writes a byte count the way sweep sizes are usually chosen:
// "16MiB", "4KiB", "1GiB" for exact multiples, "1000B" otherwise.
func FormatSize(n int64) string {
	switch {
	case n == 0:
		return "0B"
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// FormatDuration writes a run's duration to the precision it deserves:
// whole seconds from 10s ("4m14s"), tenths below ("2.3s"), milliseconds
// under a second ("340ms"), so that a short run never reads "0s".
func FormatDuration(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}
