package main

// The sweep's display for the person running it: bars on a terminal, a
// line a point anywhere else, behind harness.Progress.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/distbench/distbench/harness"
	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/results"
)

// isTerminal reports whether w is a terminal, where progress bars make
// sense; anywhere else (a file, a pipe, CI's log) they would be noise.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// newProgress returns progress bars on out when it is a terminal, and plain
// lines otherwise. Notes and, with lines, the workers' output go to errw.
func newProgress(out, errw io.Writer) harness.Progress {
	if isTerminal(out) {
		return newBarProgress(out, false)
	}
	return newLineProgress(out, errw)
}

// pointSummary is a finished point in a few words: "1234.5 us, busbw 1.23
// GB/s", or what went wrong.
func pointSummary(r *results.Record) string {
	switch {
	case r.Error != "" && strings.HasPrefix(r.Error, "skipped: "):
		return r.Error
	case r.Error != "":
		return "FAILED: " + r.Error
	case r.Incomplete:
		return "interrupted"
	case r.Kind != results.KindCollective:
		s := "done"
		if r.Loss != 0 {
			s += fmt.Sprintf(", loss %.4g", r.Loss)
		}
		if r.TestAcc != 0 {
			s += fmt.Sprintf(", test accuracy %.2f%%", 100*r.TestAcc)
		}
		return s
	}
	s := fmt.Sprintf("%.1f us, busbw %.2f GB/s", r.TimeUs, r.BusBWGBs)
	if r.Wrong > 0 {
		s += fmt.Sprintf(", %d WRONG", r.Wrong)
	}
	return s
}

// lineProgress prints one line per finished point, for logs and pipes.
type lineProgress struct {
	out, errw   io.Writer
	done, total int
}

// newLineProgress prints "[12/48] allreduce ring np=4 16MiB float32: 1234.5
// us, busbw 1.23 GB/s" on out for each finished point (with "(round 2/3)"
// after the point in a sweep in rounds, and a "round 2 of 3" line as each
// round begins), and notes on errw.
func newLineProgress(out, errw io.Writer) harness.Progress {
	return &lineProgress{out: out, errw: errw}
}

func (l *lineProgress) Start(total, done int) {
	l.total, l.done = total, done
	if done > 0 {
		fmt.Fprintf(l.out, "resuming: %d of %d done already\n", done, total)
	}
}

func (l *lineProgress) Round(round, rounds int) {
	fmt.Fprintf(l.out, "round %d of %d\n", round, rounds)
}

func (l *lineProgress) Measuring(*plan.PlannedPoint) {}

func (l *lineProgress) Finished(p *plan.PlannedPoint, r *results.Record) {
	l.done++
	fmt.Fprintf(l.out, "[%d/%d] %s: %s\n", l.done, l.total, p.Label(), pointSummary(r))
}

func (l *lineProgress) Note(msg string)   { fmt.Fprintln(l.errw, msg) }
func (l *lineProgress) Output() io.Writer { return l.errw }
func (l *lineProgress) Stop(bool)         {}

// barProgress draws a bar of measurements done (points × rounds) with the
// ETA and the point being measured; finished points and notes scroll above
// it.
type barProgress struct {
	p    *mpb.Progress
	bar  *mpb.Bar
	last time.Time

	mu      sync.Mutex
	current string
	total   int
	done    int
}

// newBarProgress draws progress bars on out, a terminal; force draws even
// when it is not (mpb draws nothing there otherwise), for tests.
func newBarProgress(out io.Writer, force bool) *barProgress {
	return &barProgress{p: mpb.New(mpb.WithOutput(out), mpb.WithWidth(40), mpb.WithRefreshRate(200*time.Millisecond),
		mpb.ContainerOptional(mpb.WithAutoRefresh(), force))}
}

func (b *barProgress) Start(total, done int) {
	b.total, b.done = total, done
	b.bar = b.p.AddBar(int64(total),
		mpb.PrependDecorators(
			decor.Name("sweep ", decor.WCSyncSpaceR),
			decor.CountersNoUnit("%d/%d done", decor.WCSyncSpace),
		),
		mpb.AppendDecorators(
			decor.EwmaETA(decor.ET_STYLE_GO, 10, decor.WCSyncSpace),
			decor.Any(func(decor.Statistics) string {
				b.mu.Lock()
				defer b.mu.Unlock()
				return "  " + b.current
			}),
		),
	)
	b.bar.SetCurrent(int64(done))
	b.last = time.Now()
}

func (b *barProgress) Measuring(p *plan.PlannedPoint) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.current = ""
	if p != nil {
		b.current = "measuring " + p.Label()
	}
}

func (b *barProgress) Round(round, rounds int) {
	fmt.Fprintf(b.p, "round %d of %d\n", round, rounds)
}

func (b *barProgress) Finished(p *plan.PlannedPoint, r *results.Record) {
	b.done++
	fmt.Fprintf(b.p, "[%d/%d] %s: %s\n", b.done, b.total, p.Label(), pointSummary(r))
	now := time.Now()
	b.bar.EwmaIncrement(now.Sub(b.last))
	b.last = now
}

func (b *barProgress) Note(msg string)   { fmt.Fprintln(b.p, msg) }
func (b *barProgress) Output() io.Writer { return b.p }

func (b *barProgress) Stop(interrupted bool) {
	if b.bar != nil {
		b.Measuring(nil)
		if interrupted || b.done < b.total {
			b.bar.Abort(false)
		} else {
			b.bar.SetTotal(-1, true)
		}
	}
	b.p.Wait()
}
