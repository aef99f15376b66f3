package plan

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/results"
)

// Expand validates the whole plan, before anything starts, and expands it
// into launches. A (strategy, np, link, options, iters, warmup) combination
// is one launch however many blocks name it, so processes start once per
// world. An error names the block and the bad value, in one line.
func (p *Plan) Expand() (*Expanded, error) {
	if p.Iters == 0 {
		p.Iters = DefaultIters
	}
	if p.Warmup == nil {
		p.Warmup = ptr(DefaultWarmup)
	}
	if p.Check == nil {
		p.Check = ptr(true)
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	if p.Rounds == 0 {
		p.Rounds = 1
	}
	switch {
	case p.Iters < 1:
		return nil, fmt.Errorf("plan: iters %d: must be at least 1", p.Iters)
	case *p.Warmup < 0:
		return nil, fmt.Errorf("plan: warmup %d: must be 0 or more", *p.Warmup)
	case p.Timeout < job.MinTimeout:
		return nil, fmt.Errorf("plan: timeout %v: too short (accepted: %v or more)", p.Timeout, job.MinTimeout)
	case p.TimeBudget < 0:
		return nil, fmt.Errorf("plan: time_budget %v: must be 0 (none) or positive", p.TimeBudget)
	case p.Rounds < 1 || p.Rounds > MaxRounds:
		return nil, fmt.Errorf("plan: rounds %d: want an integer from 1 to %d", p.Rounds, MaxRounds)
	case len(p.Collectives)+len(p.Gradients)+len(p.Training) == 0:
		return nil, errors.New("plan: nothing to measure: no collectives, gradients or training blocks")
	}
	x := &expander{plan: p, exp: &Expanded{Plan: p}, specs: map[string]*Group{}, seen: map[string]bool{}}
	for i := range p.Collectives {
		if err := x.collectives(&p.Collectives[i], fmt.Sprintf("collectives[%d]", i)); err != nil {
			return nil, err
		}
	}
	for i := range p.Gradients {
		if err := x.gradients(&p.Gradients[i], fmt.Sprintf("gradients[%d]", i)); err != nil {
			return nil, err
		}
	}
	if err := x.peers(); err != nil {
		return nil, err
	}
	for i := range p.Training {
		if err := x.training(&p.Training[i], fmt.Sprintf("training[%d]", i)); err != nil {
			return nil, err
		}
	}
	// Only a strategy's collective points are measured in rounds: a
	// training run is one long measurement of its own, a peer is not what
	// is under test, and a group that cannot run here has nothing to
	// repeat.
	for _, g := range x.exp.Groups {
		g.Rounds = 1
		if g.Spec != nil && g.Spec.Train == nil && g.Skip == "" {
			g.Rounds = int(p.Rounds)
		}
	}
	// The last word on every launch is job.Spec.Validate, which the workers
	// run too: what passes here cannot fail there. A sweep launches its
	// worlds here, so every rank's buffers must fit in this machine.
	for _, g := range x.exp.Groups {
		if g.Spec != nil && g.Skip == "" {
			if err := g.Spec.Validate(); err != nil {
				return nil, fmt.Errorf("%s: %w", g.Name(), err)
			}
			if err := g.Spec.CheckMemory(g.Spec.NP); err != nil {
				return nil, fmt.Errorf("%s: %w", g.Name(), err)
			}
		}
	}
	if x.exp.NumPoints() == 0 {
		return nil, fmt.Errorf("plan: nothing can run here: %s", strings.Join(x.exp.Notes, "; "))
	}
	return x.exp, nil
}

func ptr[T any](v T) *T { return &v }

type expander struct {
	plan  *Plan
	exp   *Expanded
	specs map[string]*Group // by launch key
	seen  map[string]bool   // point ids
	// allreduce[np] holds the float32 sum unshaped allreduce sizes, for
	// the peers.
	allreduce map[int][]int64
	// workload names what an allreduce size of the peers replays where
	// only a gradients block planned it, so that the peers' points of that
	// size carry it too.
	workload map[peerSize]string
}

type peerSize struct {
	np    int
	bytes int64
}

func (x *expander) note(s string) {
	if !slices.Contains(x.exp.Notes, s) {
		x.exp.Notes = append(x.exp.Notes, s)
	}
}

// strategies resolves a block's strategy list: "all" becomes every
// registered strategy that can run here. Each name maps to why it cannot
// run here ("" if it can).
func (x *expander) strategies(names []string, where string) ([]string, map[string]string, error) {
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("%s: strategies: missing (registered: %s, or %s)", where, strings.Join(collective.Strategies(), ", "), AllStrategies)
	}
	var out []string
	why := map[string]string{}
	for _, n := range names {
		if n == AllStrategies {
			for _, s := range collective.Strategies() {
				if reason := unavailable(s); reason != "" {
					x.note(fmt.Sprintf("%s: %s", where, reason))
					continue
				}
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
			continue
		}
		if _, err := collective.Lookup(n); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where, err)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
			why[n] = unavailable(n)
		}
	}
	return out, why, nil
}

func unavailable(strategy string) string {
	st, err := collective.Lookup(strategy)
	if err != nil {
		return err.Error()
	}
	if a, ok := st.(collective.Availability); ok {
		if err := a.Available(); err != nil {
			return fmt.Sprintf("strategy %s cannot run here: %v", strategy, err)
		}
	}
	return ""
}

func checkNP(nps []int, where string) error {
	if len(nps) == 0 {
		return fmt.Errorf("%s: np: missing (a list of world sizes, such as [2, 4])", where)
	}
	for _, n := range nps {
		if n < 1 || n > job.MaxProcesses {
			return fmt.Errorf("%s: np %d: must be between 1 and %d", where, n, job.MaxProcesses)
		}
	}
	return nil
}

func checkLinks(links []string, where string) ([]string, error) {
	// Each link is one launch; an entry of per-rank overrides alone
	// (rank3=1Gbit) applies to every other ("none" is unshaped, and one
	// point id for it is enough).
	out, err := linkspec.ExpandLinks(links)
	if err != nil {
		return nil, fmt.Errorf("%s: links: %w", where, err)
	}
	return out, nil
}

// launch is the link, transport and device of one launch.
type launch struct{ link, transport, device string }

// launchesOf is every link with every transport and every device.
func launchesOf(links, transports, devices []string) []launch {
	var out []launch
	for _, ld := range cross(links, devices) {
		for _, t := range transports {
			out = append(out, launch{ld[0], t, ld[1]})
		}
	}
	return out
}

// checkHosts validates a block's host layouts and gives each of its world
// sizes the layouts that lay out that many ranks ("" for none).
func checkHosts(layouts []string, nps []int, where string) (map[int][]string, error) {
	if len(layouts) == 0 {
		layouts = []string{""}
	}
	by := map[int][]string{}
	for _, l := range layouts {
		if l == "" {
			for _, np := range nps {
				if !slices.Contains(by[np], "") {
					by[np] = append(by[np], "")
				}
			}
			continue
		}
		n, err := job.LayoutRanks(l)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if !slices.Contains(nps, n) {
			return nil, fmt.Errorf("%s: hosts %q lays out %d ranks, but np is %v", where, l, n, nps)
		}
		if !slices.Contains(by[n], l) {
			by[n] = append(by[n], l)
		}
	}
	for _, np := range nps {
		if len(by[np]) == 0 {
			return nil, fmt.Errorf(`%s: np %d has no hosts layout (add "" to hosts to measure it without simulated hosts)`, where, np)
		}
	}
	return by, nil
}

// checkTransports validates a block's transports, in the form a Spec
// holds them (job.CanonicalTransport); none is TCP.
func checkTransports(names []string, where string) ([]string, error) {
	if len(names) == 0 {
		return []string{""}, nil
	}
	var out []string
	for _, n := range names {
		if err := linkspec.CheckTransport(n); err != nil {
			return nil, fmt.Errorf("%s: transports: %w", where, err)
		}
		if c := job.CanonicalTransport(n); !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func checkOptions(strategy string, opts map[string]string, where string) error {
	st, _ := collective.Lookup(strategy)
	if v, ok := st.(collective.OptionValidator); ok {
		if err := v.ValidateOptions(opts); err != nil {
			return fmt.Errorf("%s: strategy %s: %w", where, strategy, err)
		}
	}
	return nil
}

// group returns the launch for a key, creating it.
func (x *expander) group(strategy string, np int, l launch, hosts string, opts map[string]string, iters, warmup int, skip string) *Group {
	link, tr, device := l.link, l.transport, l.device
	key := fmt.Sprintf("%s\x00%d\x00%s\x00%s\x00%s\x00%s\x00%v\x00%d\x00%d", strategy, np, link, tr, device, hosts, opts, iters, warmup)
	if g, ok := x.specs[key]; ok {
		return g
	}
	if len(opts) == 0 {
		opts = nil
	}
	g := &Group{Skip: skip, Spec: &job.Spec{
		Strategy: strategy, NP: np, Options: maps.Clone(opts), Link: link, Transport: tr, Device: device, Hosts: hosts, Timeout: x.plan.Timeout,
		Iters: iters, Warmup: warmup, Check: *x.plan.Check, KeepSamples: true, TimeBudget: x.plan.TimeBudget,
	}}
	x.specs[key] = g
	x.exp.Groups = append(x.exp.Groups, g)
	return g
}

// add puts p into g unless a point with its id is planned already.
func (x *expander) add(g *Group, p job.Point, about string) {
	s := g.Spec
	id := s.PointID(p)
	if x.seen[id] {
		return
	}
	x.seen[id] = true
	s.Points = append(s.Points, p)
	rec := s.Record(p)
	rec.Workload = about
	desc := fmt.Sprintf("%s %s np=%d %s %s", p.Collective, s.Strategy, s.NP, results.FormatSize(rec.Bytes), rec.DType)
	if rec.Op != "" && rec.Op != "sum" {
		desc += " " + rec.Op
	}
	if !p.InPlace {
		desc += " out-of-place"
	}
	if s.Link != "" {
		desc += " link=" + s.Link
	}
	if s.Transport != "" {
		desc += " mesh=" + s.Transport
	}
	if s.Hosts != "" {
		desc += " hosts=" + s.Hosts
	}
	if s.OnDevice() {
		desc += " device=" + s.Device
	}
	if about != "" {
		desc += " (" + about + ")"
	}
	g.Points = append(g.Points, PlannedPoint{ID: id, Desc: desc, Record: *rec})
	if p.Collective == "allreduce" && rec.DType == "float32" && rec.Op == "sum" && s.Link == "" && s.Transport == "" && rec.Bytes > 0 {
		if x.allreduce == nil {
			x.allreduce = map[int][]int64{}
		}
		if !slices.Contains(x.allreduce[s.NP], rec.Bytes) {
			x.allreduce[s.NP] = append(x.allreduce[s.NP], rec.Bytes)
		}
		if x.workload == nil {
			x.workload = map[peerSize]string{}
		}
		// A size that a strategy measures as a plain point too is plain
		// for the peers: it lies on their line.
		k := peerSize{s.NP, rec.Bytes}
		if w, ok := x.workload[k]; !ok || (w != "" && about == "") {
			x.workload[k] = about
		}
	}
}

func (x *expander) collectives(b *CollectiveBlock, where string) error {
	strategies, why, err := x.strategies(b.Strategies, where)
	if err != nil {
		return err
	}
	if err := checkNP(b.NP, where); err != nil {
		return err
	}
	if len(b.Collectives) == 0 {
		return fmt.Errorf("%s: collectives: missing (accepted: %s)", where, strings.Join(job.Collectives(), ", "))
	}
	for _, c := range b.Collectives {
		if _, ok := job.TraitsOf(c); !ok {
			return fmt.Errorf("%s: unknown collective %q (accepted: %s)", where, c, strings.Join(job.Collectives(), ", "))
		}
	}
	dtNames := b.DTypes
	if len(dtNames) == 0 {
		dtNames = []string{"float32"}
	}
	var dts []collective.DType
	for _, d := range dtNames {
		dt, err := collective.ParseDType(d)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		dts = append(dts, dt)
	}
	ops := b.Ops
	if len(ops) == 0 {
		ops = []string{"sum"}
	}
	for _, o := range ops {
		if _, err := collective.ParseOp(o); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	var modes []bool
	switch b.InPlace {
	case "in", "":
		modes = []bool{true}
	case "out":
		modes = []bool{false}
	case "both":
		modes = []bool{false, true}
	default:
		return fmt.Errorf("%s: inplace %q (accepted: in, out, both)", where, b.InPlace)
	}
	sizes, err := b.Sizes.expand(dts)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	links, err := checkLinks(b.Links, where)
	if err != nil {
		return err
	}
	transports, err := checkTransports(b.Transports, where)
	if err != nil {
		return err
	}
	devices, err := checkDevices(b.Devices, where)
	if err != nil {
		return err
	}
	hosts, err := checkHosts(b.Hosts, b.NP, where)
	if err != nil {
		return err
	}
	iters, warmup := x.plan.Iters, *x.plan.Warmup
	if b.Iters != 0 {
		iters = b.Iters
	}
	if b.Warmup != nil {
		warmup = *b.Warmup
	}
	if iters < 1 || warmup < 0 {
		return fmt.Errorf("%s: iters %d, warmup %d: want iters ≥ 1 and warmup ≥ 0", where, iters, warmup)
	}
	for _, np := range b.NP {
		if b.Root < 0 || b.Root >= np {
			return fmt.Errorf("%s: root %d out of range for np %d (accepted: 0..%d)", where, b.Root, np, np-1)
		}
	}
	for _, st := range strategies {
		if err := checkOptions(st, b.Options, where); err != nil {
			return err
		}
		if why[st] != "" && x.plan.SkipUnavailable {
			x.note(fmt.Sprintf("%s: %s", where, why[st]))
			continue
		}
		for _, np := range b.NP {
			for _, l := range launchesOf(links, transports, devices) {
				skip := why[st]
				if skip == "" {
					if skip = deviceUnavailable(l.device); skip != "" && x.plan.SkipUnavailable {
						x.note(fmt.Sprintf("%s: %s", where, skip))
						continue
					}
				}
				for _, h := range hosts[np] {
					g := x.group(st, np, l, h, b.Options, iters, warmup, skip)
					for _, c := range b.Collectives {
						for _, dt := range dts {
							for _, op := range ops {
								if t, _ := job.TraitsOf(c); !t.Reduces && op != ops[0] {
									continue // one point, whatever the op
								}
								for _, s := range sizes {
									for _, in := range modes {
										x.add(g, job.Point{Collective: c, Bytes: s, DType: dt.String(), Op: op, Root: b.Root, InPlace: in}, b.about)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return nil
}
