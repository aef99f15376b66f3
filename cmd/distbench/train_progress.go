package main

import (
	"fmt"
	"io"
	"time"

	"github.com/distbench/distbench/results"
)

// clearLine returns a terminal's cursor to the start of its line and
// clears it, for a status line rewritten in place.
const clearLine = "\r\033[K"

// statusWriter is where a status line goes: stderr, so that stdout (a
// table, epoch lines) stays what scripts parse, and only where stderr is the
// user's terminal under the local launcher. An external launcher's rank may
// have a terminal of the launcher's (mpirun gives its ranks ptys) whose
// bytes it forwards into the job's output: there it is none.
func statusWriter(launcher string, stderr io.Writer) io.Writer {
	if launcher != "local" || !isTerminal(stderr) {
		return nil
	}
	return stderr
}

// runStatus is `distbench run`'s line between rows on a terminal: how many
// rows are done of a cycle's points (cycles 0: until interrupted).
func runStatus(done, points, cycles int) string {
	if points <= 0 {
		return fmt.Sprintf("# %d row(s) done; measuring the next…", done)
	}
	cycle := (done-1)/points + 1
	s := fmt.Sprintf("# %d of %d row(s) done", (done-1)%points+1, points)
	if cycles != 1 {
		s += fmt.Sprintf(" in cycle %d", cycle)
		if cycles > 1 {
			s += fmt.Sprintf(" of %d", cycles)
		}
	}
	return s + "; measuring the next…"
}

// trainProgress is `distbench train`'s status line on a terminal: the
// epoch and step, the throughput over the recent steps, and an estimate of
// the time left in the epoch where the epoch's length is known (a step
// limit, or the first epoch's steps once it ended). It rewrites one line
// in place; the epoch lines print over it. Off a terminal it is not made:
// a log gets the epoch lines alone.
type trainProgress struct {
	w        io.Writer
	maxSteps int // the step limit per epoch (0: the whole epoch)
	perEpoch int // steps in an epoch, once known
	epoch    int
	first    int // the global step the epoch began after
	rates    []float64
}

// step updates the line for a step record.
func (p *trainProgress) step(r *results.Record) {
	if r.Epoch != p.epoch {
		p.epoch, p.first, p.rates = r.Epoch, r.Step-1, nil
	}
	if r.ImagesPerS > 0 {
		p.rates = append(p.rates, r.ImagesPerS)
		if len(p.rates) > 20 {
			p.rates = p.rates[1:]
		}
	}
	fmt.Fprintf(p.w, clearLine+"%s", p.line(r.Step-p.first, r.ComputeMs+r.ExposedMs))
}

// line is the status after done steps of the epoch, the last taking
// stepMs (0: unknown).
func (p *trainProgress) line(done int, stepMs float64) string {
	per := p.perEpoch
	if p.maxSteps > 0 && (per == 0 || p.maxSteps < per) {
		per = p.maxSteps
	}
	s := fmt.Sprintf("epoch %d: step %d", p.epoch, done)
	if per > 0 {
		s += fmt.Sprintf("/%d", per)
	}
	rate := 0.0
	for _, x := range p.rates {
		rate += x
	}
	if len(p.rates) > 0 {
		rate /= float64(len(p.rates))
		s += fmt.Sprintf(", %.0f images/s", rate)
	}
	if per > done && stepMs > 0 {
		left := time.Duration(float64(per-done) * stepMs * float64(time.Millisecond))
		s += ", about " + results.FormatDuration(left) + " left in the epoch"
	}
	return s
}

// epochDone clears the line before the epoch's own line and learns the
// epoch's length.
func (p *trainProgress) epochDone(r *results.Record) {
	if p.perEpoch == 0 && r.Step > 0 {
		p.perEpoch = r.Step - p.first
	}
	fmt.Fprint(p.w, clearLine)
}
