package costmodel

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/distbench/distbench/stats"
)

// crowdSteps is the grid on which Crowd is fitted: 0, 1/crowdSteps, …, 1.
// Between 0 (a message's fixed cost does not grow with ranks per core) and
// 1 (it grows in proportion, as the per-byte costs do) is where the
// sweeps put it (docs/design/costmodel.md); the grid is finer than its intervals.
const crowdSteps = 10

// fitSeries fits each series' α, κ, γ and δ at every Crowd of the grid
// and keeps the Crowd at which the series together fit best: the least
// Huber loss of their relative residuals, one scale for all (huberScale).
// A profile, not a joint least squares, because the times are not linear
// in Crowd; one Crowd for all the series because it is the host's
// scheduler and cores, not an algorithm's or a link's, and the np 3 and
// 4 points that tell it (1.5 and 2 ranks per core on 2 cores) are few in
// each series. Where no point ran more ranks than cores it is not
// identified: 1, with the interval [0, 1].
func fitSeries(ss []series, seed uint64) ([]Fit, error) {
	if len(ss) == 0 {
		return nil, nil
	}
	crowds := []float64{1}
	if oversubscribed(ss) {
		crowds = crowds[:0]
		for g := range crowdSteps + 1 {
			crowds = append(crowds, float64(g)/crowdSteps)
		}
	}
	grid := make([][]linear, len(crowds))
	for g, c := range crowds {
		grid[g] = make([]linear, len(ss))
		for j, s := range ss {
			l, err := fitAt(s, c)
			if err != nil {
				return nil, err
			}
			grid[g][j] = l
		}
	}
	k := huberScale(grid)
	best := argminLoss(grid, k, func(g, j int) (Params, []float64) { return grid[g][j].p, grid[g][j].ys })
	fits := make([]Fit, len(ss))
	for j, s := range ss {
		fits[j] = s.fit(grid[best][j])
	}
	bootstrapAll(fits, ss, grid, crowds, k, seed)
	if len(crowds) == 1 {
		for j := range fits {
			fits[j].Lo.Crowd, fits[j].Hi.Crowd = 0, 1
		}
	}
	return fits, nil
}

// oversubscribed reports whether any point ran more ranks than its
// machine's cores: only those tell Crowd.
func oversubscribed(ss []series) bool {
	for _, s := range ss {
		for _, p := range s.pts {
			if p.Cores > 0 && p.NP > p.Cores {
				return true
			}
		}
	}
	return false
}

// huberScale is the Huber threshold of the profile's loss over the
// relative residuals of every fit on the grid pooled, one number, so that
// the losses at different Crowds compare.
func huberScale(grid [][]linear) float64 {
	var res []float64
	for _, row := range grid {
		for _, l := range row {
			for i, t := range l.rows {
				res = append(res, (t.At(l.p)-l.ys[i])/l.ys[i])
			}
		}
	}
	return huberThreshold(res)
}

// huberThreshold is Huber's threshold for residuals res: 1.345 robust
// standard deviations (stats.ScaledMAD, in the residuals' own units; 10⁻³
// where they have none), past which a residual counts linearly rather than
// squared. The residuals are relative errors centred near zero, so their
// spread is absolute: a spread relative to their median would hang on the
// sign and size of that median.
func huberThreshold(res []float64) float64 {
	s := stats.ScaledMAD(res)
	if s <= 0 {
		s = 1e-3
	}
	return 1.345 * s
}

// argminLoss returns the grid index whose parameters (at, per grid index
// and series: the parameters and the times they are held against) have
// the least Huber loss at threshold k over every series; a tie goes to the
// larger Crowd, the proportional growth the model had before.
func argminLoss(grid [][]linear, k float64, at func(g, j int) (Params, []float64)) int {
	best, bestLoss := 0, math.Inf(1)
	for g := len(grid) - 1; g >= 0; g-- {
		loss := 0.0
		for j, l := range grid[g] {
			p, ys := at(g, j)
			for i, t := range l.rows {
				r := math.Abs(t.At(p)-ys[i]) / ys[i]
				if r <= k {
					loss += r * r / 2
				} else {
					loss += k*r - k*k/2
				}
			}
		}
		if loss < bestLoss {
			best, bestLoss = g, loss
		}
	}
	return best
}

// bootstrapAll sets fits' Lo and Hi: the 2.5th and 97.5th percentiles of
// 200 refits, each drawing one round per point of every series and
// refitting every series' final linearisation at every Crowd of the grid,
// then keeping the Crowd that fits that draw best. So α's, κ's, γ's and
// δ's intervals include what the uncertain Crowd does to them.
func bootstrapAll(fits []Fit, ss []series, grid [][]linear, crowds []float64, k float64, seed uint64) {
	const reps = 200
	rng := rand.New(rand.NewPCG(seed, 21))
	draws := make([][]float64, len(ss))
	for j, s := range ss {
		draws[j] = make([]float64, len(s.pts))
	}
	qs := make([][]Params, len(grid))
	for g := range qs {
		qs[g] = make([]Params, len(ss))
	}
	type samples struct{ alpha, kappa, gamma, step, crowd []float64 }
	per := make([]samples, len(ss))
	for range reps {
		for j, s := range ss {
			for i, pt := range s.pts {
				draws[j][i] = pt.Rounds[rng.IntN(len(pt.Rounds))]
			}
		}
		for g := range grid {
			for j, l := range grid[g] {
				qs[g][j] = solve(l.rows, draws[j], l.w, l.fixed, l.free)
			}
		}
		g := argminLoss(grid, k, func(g, j int) (Params, []float64) { return qs[g][j], draws[j] })
		for j := range ss {
			q, s := qs[g][j], &per[j]
			s.alpha, s.kappa, s.gamma = append(s.alpha, q.Alpha), append(s.kappa, q.Kappa), append(s.gamma, q.Gamma)
			s.step, s.crowd = append(s.step, q.Step), append(s.crowd, crowds[g])
		}
	}
	for j := range fits {
		s := &per[j]
		lo, hi := grid[0][j].fixed, grid[0][j].fixed
		for _, v := range []struct {
			xs     []float64
			lo, hi *float64
		}{
			{s.alpha, &lo.Alpha, &hi.Alpha}, {s.kappa, &lo.Kappa, &hi.Kappa}, {s.gamma, &lo.Gamma, &hi.Gamma},
			{s.step, &lo.Step, &hi.Step}, {s.crowd, &lo.Crowd, &hi.Crowd},
		} {
			slices.Sort(v.xs)
			*v.lo, *v.hi = stats.Quantile(v.xs, 0.025), stats.Quantile(v.xs, 0.975)
		}
		fits[j].Lo, fits[j].Hi = lo, hi
	}
}
