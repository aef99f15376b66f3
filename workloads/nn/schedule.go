package nn

import "math"

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
