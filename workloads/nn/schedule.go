package nn

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Schedule gives the learning rate at step t (t from 0), where a step is
// whatever unit the caller advances it by: an iteration or an epoch.
type Schedule interface {
	LR(t int) float64
}

// Constant is a fixed learning rate.
type Constant float64

func (c Constant) LR(int) float64 { return float64(c) }

// StepLR multiplies Base by Gamma every StepSize steps, as
// torch.optim.lr_scheduler.StepLR.
type StepLR struct {
	Base     float64
	StepSize int
	Gamma    float64
}

func (s StepLR) LR(t int) float64 {
	if s.StepSize <= 0 {
		return s.Base
	}
	return s.Base * math.Pow(s.Gamma, float64(t/s.StepSize))
}

// MultiStepLR multiplies Base by Gamma at each milestone, as
// torch.optim.lr_scheduler.MultiStepLR (ResNet recipes: epochs 30, 60, 80).
type MultiStepLR struct {
	Base       float64
	Milestones []int
	Gamma      float64
}

func (s MultiStepLR) LR(t int) float64 {
	lr := s.Base
	for _, m := range s.Milestones {
		if t >= m {
			lr *= s.Gamma
		}
	}
	return lr
}

// CosineLR anneals from Base to Min over Total steps along half a cosine, as
// torch's CosineAnnealingLR with T_max = Total; it stays at Min after.
type CosineLR struct {
	Base, Min float64
	Total     int
}

func (s CosineLR) LR(t int) float64 {
	if s.Total <= 0 || t >= s.Total {
		return s.Min
	}
	return s.Min + (s.Base-s.Min)*(1+math.Cos(math.Pi*float64(t)/float64(s.Total)))/2
}

// Warmup scales Then's rate linearly from StartFactor·LR up to the full
// rate over the first Steps steps, then follows Then unchanged (t is not
// shifted). This is the gradual warm-up of Goyal et al., "Accurate, Large
// Minibatch SGD" (2017), which makes the linear scaling rule work at large
// batches; like torch's LinearLR it multiplies the inner schedule.
type Warmup struct {
	Steps       int
	StartFactor float64
	Then        Schedule
}

func (w Warmup) LR(t int) float64 {
	lr := w.Then.LR(t)
	if t >= w.Steps || w.Steps <= 0 {
		return lr
	}
	f := w.StartFactor + (1-w.StartFactor)*float64(t)/float64(w.Steps)
	return lr * f
}

// LinearScaling is the linear scaling rule of Goyal et al.: when the
// global minibatch grows from refBatch to batch (k workers × per-worker
// batch), multiply the learning rate by batch/refBatch. Their ImageNet
// recipe is baseLR 0.1 at refBatch 256.
func LinearScaling(baseLR float64, batch, refBatch int) float64 {
	if refBatch <= 0 {
		return baseLR
	}
	return baseLR * float64(batch) / float64(refBatch)
}

// ScheduleSyntax lists the textual forms ParseSchedule accepts.
const ScheduleSyntax = "constant, step:EVERY:GAMMA, multistep:M1,M2,...:GAMMA, cosine, cosine:MIN"

// ParseSchedule makes a Schedule from its textual form, over the base rate
// base and a run of total steps (whatever unit the caller steps it by;
// distbench train steps it once per epoch):
//
//	"" or "constant"           Constant(base)
//	"step:EVERY:GAMMA"         StepLR: ×GAMMA every EVERY steps ("step:30:0.1")
//	"multistep:M1,M2,…:GAMMA"  MultiStepLR: ×GAMMA at each milestone ("multistep:30,60,80:0.1")
//	"cosine" or "cosine:MIN"   CosineLR from base to MIN (default 0) over total steps
//
// EVERY and the milestones are positive integers, the milestones strictly
// increasing; GAMMA is a factor in (0, 1]; MIN is in [0, base). A milestone
// or step size beyond total is allowed (a shortened run of a longer
// recipe). The error for a bad spec is one line that names the fault and
// lists the accepted forms.
func ParseSchedule(spec string, base float64, total int) (Schedule, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("lr schedule %q: %s (accepted: %s)", spec, fmt.Sprintf(format, args...), ScheduleSyntax)
	}
	if !(base > 0) || math.IsInf(base, 0) {
		return nil, bad("base rate %v must be positive and finite", base)
	}
	name, rest, hasArgs := strings.Cut(spec, ":")
	var args []string
	if hasArgs {
		args = strings.Split(rest, ":")
	}
	gamma := func(s string) (float64, error) {
		g, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(g > 0 && g <= 1) {
			return 0, bad("GAMMA %q must be a factor in (0, 1]", s)
		}
		return g, nil
	}
	switch name {
	case "", "constant":
		if hasArgs {
			return nil, bad("constant takes no arguments")
		}
		return Constant(base), nil
	case "step":
		if len(args) != 2 {
			return nil, bad("want step:EVERY:GAMMA")
		}
		every, err := strconv.Atoi(strings.TrimSpace(args[0]))
		if err != nil || every < 1 {
			return nil, bad("EVERY %q must be a positive integer", args[0])
		}
		g, err := gamma(args[1])
		if err != nil {
			return nil, err
		}
		return StepLR{Base: base, StepSize: every, Gamma: g}, nil
	case "multistep":
		if len(args) != 2 {
			return nil, bad("want multistep:M1,M2,...:GAMMA")
		}
		var ms []int
		for _, f := range strings.Split(args[0], ",") {
			m, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || m < 1 {
				return nil, bad("milestone %q must be a positive integer", f)
			}
			if len(ms) > 0 && m <= ms[len(ms)-1] {
				return nil, bad("milestone %d after %d: milestones must be strictly increasing", m, ms[len(ms)-1])
			}
			ms = append(ms, m)
		}
		g, err := gamma(args[1])
		if err != nil {
			return nil, err
		}
		return MultiStepLR{Base: base, Milestones: ms, Gamma: g}, nil
	case "cosine":
		if len(args) > 1 {
			return nil, bad("want cosine or cosine:MIN")
		}
		var lo float64
		if len(args) == 1 {
			var err error
			lo, err = strconv.ParseFloat(strings.TrimSpace(args[0]), 64)
			if err != nil || !(lo >= 0 && lo < base) {
				return nil, bad("MIN %q must be a rate in [0, %v), below the base rate", args[0], base)
			}
		}
		if total < 1 {
			return nil, bad("cosine anneals over the run, which has %d steps", total)
		}
		return CosineLR{Base: base, Min: lo, Total: total}, nil
	}
	return nil, bad("unknown schedule %q", name)
}
