package harness

import (
	"io"

	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/results"
)

// Progress shows a sweep to the person running it. The sweep calls it from
// one goroutine at a time.
type Progress interface {
	// Start is called once: total measurements planned (a point measured
	// in three rounds counts three times), done of them already finished by
	// an earlier session (--resume).
	Start(total, done int)
	// Round is called as each round of a sweep in several rounds begins
	// (Plan.Rounds); a sweep in one round never calls it.
	Round(round, rounds int)
	// Measuring names the point now being measured.
	Measuring(p *plan.PlannedPoint)
	// Finished reports a point's record, as written.
	Finished(p *plan.PlannedPoint, r *results.Record)
	// Note is a line for the person: a skipped strategy, a failed launch.
	Note(msg string)
	// Output is where the workers' own output goes without tearing the
	// display.
	Output() io.Writer
	// Stop ends the display; interrupted says the sweep did not finish.
	Stop(interrupted bool)
}

// quiet is the Progress of a sweep given none: it shows nothing.
type quiet struct{}

func (quiet) Start(int, int)                               {}
func (quiet) Round(int, int)                               {}
func (quiet) Measuring(*plan.PlannedPoint)                 {}
func (quiet) Finished(*plan.PlannedPoint, *results.Record) {}
func (quiet) Note(string)                                  {}
func (quiet) Output() io.Writer                            { return io.Discard }
func (quiet) Stop(bool)                                    {}

// outputs is the progress display and the workers' stderr a sweep uses:
// quiet when given none, and the display's output for stderr.
func outputs(prog Progress, stderr io.Writer) (Progress, io.Writer) {
	if prog == nil {
		prog = quiet{}
	}
	if stderr == nil {
		stderr = prog.Output()
	}
	return prog, stderr
}
