package plan

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/peers"
	"github.com/distbench/distbench/results"
)

// PlannedPoint is one point of an expanded plan.
type PlannedPoint struct {
	ID   string // Record.Point
	Desc string // for progress lines: "allreduce ring np=4 16MiB float32"
	// Record is the point's record with everything but measurements, for
	// recording a point that failed or was skipped.
	Record results.Record
	// Round of Rounds is the round being measured, during a sweep in
	// rounds; both are 0 in an expanded plan.
	Round, Rounds int
}

// Label is Desc, and the round when the point is measured in several:
// "allreduce ring np=4 16MiB float32 (round 2/3)".
func (p *PlannedPoint) Label() string {
	if p.Rounds > 1 {
		return fmt.Sprintf("%s (round %d/%d)", p.Desc, p.Round, p.Rounds)
	}
	return p.Desc
}

// PeerJob is one launch of a peer: every size at one world size.
type PeerJob struct {
	Peer  string
	Job   peers.Job
	Avail error // nil when the peer is installed here
}

// Group is one launch of an expanded plan: a strategy's world measuring
// all its points (process start-up paid once), a training run (Spec.Train
// set, one point), or a peer's run (Peer set).
type Group struct {
	Spec *job.Spec
	Peer *PeerJob
	// Skip, when set, is why this group cannot run here ("strategy nccl
	// cannot run here: ..."); its points are recorded as failed with it.
	Skip   string
	Points []PlannedPoint
	// Rounds is how many rounds the group is launched in: the plan's for
	// a strategy's collective points, 1 for a training run, a peer and a
	// group that cannot run here (Plan.Rounds).
	Rounds int
}

// RoundSpec is the launch of round k (1-based) of a collective group: its
// spec with each point's iterations and time budget split across the
// group's rounds (Plan.Rounds).
func (g *Group) RoundSpec(k int) *job.Spec {
	s := *g.Spec
	if g.Rounds > 1 && s.Train == nil {
		s.Iters = roundIters(s.Iters, g.Rounds, k)
		s.TimeBudget /= time.Duration(g.Rounds)
		if g.Spec.TimeBudget > 0 && s.TimeBudget == 0 {
			s.TimeBudget = 1 // a budget split to nothing is still a budget
		}
	}
	return &s
}

// roundIters is round k's share (1-based) of total iterations over rounds:
// total/rounds, one more for the first total%rounds rounds, and never fewer
// than job.MinBudgetIters (or total, if fewer), a median of fewer being no
// statistic.
func roundIters(total, rounds, k int) int {
	n := total / rounds
	if k <= total%rounds {
		n++
	}
	return max(n, min(total, job.MinBudgetIters))
}

// Name describes the group in one line.
func (g *Group) Name() string {
	switch {
	case g.Spec != nil && g.Spec.Train != nil:
		return g.Points[0].Desc
	case g.Spec != nil:
		s := fmt.Sprintf("%s np=%d", g.Spec.Strategy, g.Spec.NP)
		if g.Spec.Link != "" {
			s += " link=" + g.Spec.Link
		}
		if g.Spec.Transport != "" {
			s += " mesh=" + g.Spec.Transport
		}
		if g.Spec.Hosts != "" {
			s += " hosts=" + g.Spec.Hosts
		}
		if g.Spec.OnDevice() {
			s += " device=" + g.Spec.Device
		}
		for _, k := range slices.Sorted(maps.Keys(g.Spec.Options)) {
			s += " " + k + "=" + g.Spec.Options[k]
		}
		return s
	case g.Peer != nil:
		return fmt.Sprintf("%s (peer) np=%d", g.Peer.Peer, g.Peer.Job.NP)
	}
	return "?"
}

// Expanded is a validated plan, ready to run.
type Expanded struct {
	Plan   *Plan
	Groups []*Group
	// Notes say what SkipUnavailable left out.
	Notes []string
}

// IDs lists every planned point id, in order.
func (e *Expanded) IDs() []string {
	var ids []string
	for _, g := range e.Groups {
		for _, p := range g.Points {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// NumPoints counts the planned points.
func (e *Expanded) NumPoints() int {
	n := 0
	for _, g := range e.Groups {
		n += len(g.Points)
	}
	return n
}

// NumMeasurements counts the planned measurements: a point measured in
// three rounds counts three times.
func (e *Expanded) NumMeasurements() int {
	n := 0
	for _, g := range e.Groups {
		n += len(g.Points) * max(g.Rounds, 1)
	}
	return n
}

// NumLaunches counts the launches the sweep makes: one per group and round.
func (e *Expanded) NumLaunches() int {
	n := 0
	for _, g := range e.Groups {
		n += max(g.Rounds, 1)
	}
	return n
}

// Rounds is the plan's number of rounds.
func (e *Expanded) Rounds() int { return max(int(e.Plan.Rounds), 1) }
