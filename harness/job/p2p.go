package job

import "fmt"

// validateP2P checks what only point-to-point benchmarks take: a world of at
// least two ranks, a window, and their own iterations.
func (p Point) validateP2P(t Traits, np int) error {
	if !t.PointToPoint {
		if p.Window != 0 || p.Iters != 0 || p.Warmup != 0 {
			return fmt.Errorf("%s: window and per-point iterations are for the p2p benchmarks only", p.Collective)
		}
		return nil
	}
	if np < 2 {
		return fmt.Errorf("%s: np %d: needs ranks 0 and 1 (accepted: np 2 or more)", p.Collective, np)
	}
	if p.Window < 0 || p.Window > MaxWindow {
		return fmt.Errorf("%s: window %d out of range (accepted: 1 to %d, or 0 for %d)", p.Collective, p.Window, MaxWindow, DefaultWindow)
	}
	if p.Iters < 0 || p.Warmup < 0 {
		return fmt.Errorf("%s: iterations %d, warm-up %d: must be 0 or more", p.Collective, p.Iters, p.Warmup)
	}
	return nil
}

// WindowOf is the window p2p-bw and p2p-bibw keep in flight at p.
func (p Point) WindowOf() int {
	if p.Window > 0 {
		return p.Window
	}
	return DefaultWindow
}

// ItersOf is the timed and warm-up iterations of p in s: the point's own
// where it gives them, else the spec's.
func (s *Spec) ItersOf(p Point) (iters, warmup int) {
	if p.Iters > 0 {
		return p.Iters, p.Warmup
	}
	return s.Iters, s.Warmup
}
