package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/distbench/distbench/results"
)

// collectiveOrder is the order sections appear in, nccl-tests' order.
var collectiveOrder = []string{"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce", "gather", "scatter", "sendrecv"}

func collectiveRank(c string) int {
	if i := slices.Index(collectiveOrder, strings.ToLower(c)); i >= 0 {
		return i
	}
	return len(collectiveOrder)
}

// good reports whether r is a usable measurement: it finished, did not fail,
// computed the right answer and has a time.
func good(r *results.Record) bool {
	return r.Error == "" && !r.Incomplete && r.Wrong == 0 && r.TimeUs > 0
}

// seriesName names the line a record belongs to: its strategy, or its peer
// marked as such, plus any strategy options that set it apart.
func seriesName(r *results.Record) string {
	name := strategyName(r)
	if r.Peer != "" {
		name = strings.TrimSpace(r.Strategy + " " + r.Peer + " (peer)")
	}
	keys := make([]string, 0, len(r.Options))
	for k := range r.Options {
		if k != transportOption {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		name += fmt.Sprintf(" %s=%s", k, r.Options[k])
	}
	if r.Device != "" {
		name += " (" + r.Device + ")" // device buffers: a line apart from the same strategy's host runs
	}
	if name == "" {
		name = "(unnamed)"
	}
	return name
}

// baseName is what a series is coloured by: the strategy (with its
// transport) or peer alone.
func baseName(r *results.Record) string {
	if r.Peer != "" {
		return r.Peer
	}
	return strategyName(r)
}

// transportOption is the strategy option that says what a strategy's data
// travels over (the parameter server's mesh or grpc).
const transportOption = "transport"

// strategyName is the strategy with its transport where that is not the
// default mesh: "ps", "ps/grpc". The transports of one algorithm are two
// series, named apart wherever both ran.
func strategyName(r *results.Record) string {
	if t := r.Options[transportOption]; t != "" && t != "mesh" {
		return r.Strategy + "/" + t
	}
	return r.Strategy
}

// sectionKey holds what a plot must not mix: only points that agree on all
// of it are comparable.
type sectionKey struct {
	collective, dtype, op string
	inPlace               bool
	link                  string
}

type cellKey struct {
	series string
	np     int
	bytes  int64
}

// section is one collective variant: its points by series, world size and
// message size.
type section struct {
	key    sectionKey
	title  string
	slug   string
	series []string // strategies first, then peers, each sorted
	peer   map[string]bool
	base   map[string]string // series → baseName, for colours
	nps    []int
	sizes  []int64
	pts    map[cellKey]*results.Record
}

func (s *section) at(series string, np int, bytes int64) *results.Record {
	return s.pts[cellKey{series, np, bytes}]
}

// collectiveSections groups the usable collective records. A later record of
// the same point replaces an earlier one: a resumed run measured it again.
func collectiveSections(recs []results.Record) []*section {
	byKey := map[sectionKey]*section{}
	for i := range recs {
		r := &recs[i]
		if r.Kind != results.KindCollective || !good(r) {
			continue
		}
		k := sectionKey{strings.ToLower(r.Collective), r.DType, r.Op, r.InPlace, r.Link}
		s := byKey[k]
		if s == nil {
			s = &section{key: k, peer: map[string]bool{}, base: map[string]string{}, pts: map[cellKey]*results.Record{}}
			byKey[k] = s
		}
		name := seriesName(r)
		s.pts[cellKey{name, r.NP, r.Bytes}] = r
		s.base[name] = baseName(r)
		if r.Peer != "" {
			s.peer[name] = true
		}
	}
	var out []*section
	for _, s := range byKey {
		for c := range s.pts {
			if !slices.Contains(s.series, c.series) {
				s.series = append(s.series, c.series)
			}
			if !slices.Contains(s.nps, c.np) {
				s.nps = append(s.nps, c.np)
			}
			if !slices.Contains(s.sizes, c.bytes) {
				s.sizes = append(s.sizes, c.bytes)
			}
		}
		slices.SortFunc(s.series, func(a, b string) int {
			if s.peer[a] != s.peer[b] {
				if s.peer[a] {
					return 1
				}
				return -1
			}
			return strings.Compare(a, b)
		})
		slices.Sort(s.nps)
		slices.Sort(s.sizes)
		s.title, s.slug = sectionTitle(s.key)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *section) int {
		if d := collectiveRank(a.key.collective) - collectiveRank(b.key.collective); d != 0 {
			return d
		}
		return strings.Compare(a.slug, b.slug)
	})
	return out
}

func sectionTitle(k sectionKey) (title, slugText string) {
	var parts []string
	if k.dtype != "" {
		parts = append(parts, k.dtype)
	}
	if k.op != "" {
		parts = append(parts, k.op)
	}
	place := "out-of-place"
	if k.inPlace {
		place = "in-place"
	}
	parts = append(parts, place)
	if k.link != "" {
		parts = append(parts, "link "+k.link)
	}
	title = k.collective + " (" + strings.Join(parts, ", ") + ")"
	ip := "oop"
	if k.inPlace {
		ip = "ip"
	}
	return title, slug(k.collective, k.dtype, k.op, ip, k.link)
}

// trainGroup is one model on one dataset, with a series per way of training it.
type trainGroup struct {
	title, slug string
	series      []string
	base        map[string]string
	steps       map[string][]*results.Record // train_step records in file order
	epochs      map[string][]*results.Record // train_epoch records in file order
}

func trainGroups(recs []results.Record) []*trainGroup {
	type gk struct{ model, dataset string }
	var order []gk
	byKey := map[gk][]*results.Record{}
	for i := range recs {
		r := &recs[i]
		if (r.Kind != results.KindTrainStep && r.Kind != results.KindTrainEpoch) || r.Error != "" {
			continue
		}
		k := gk{r.Model, r.Dataset}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], r)
	}
	slices.SortFunc(order, func(a, b gk) int {
		return strings.Compare(a.model+"\x00"+a.dataset, b.model+"\x00"+b.dataset)
	})
	var out []*trainGroup
	for _, k := range order {
		rs := byKey[k]
		label := trainLabeller(rs)
		g := &trainGroup{base: map[string]string{}, steps: map[string][]*results.Record{}, epochs: map[string][]*results.Record{}}
		g.title = strings.TrimSpace(k.model + " on " + k.dataset)
		if k.dataset == "" {
			g.title = k.model
		}
		g.slug = slug(k.model, k.dataset)
		for _, r := range rs {
			name := label(r)
			if _, ok := g.base[name]; !ok {
				g.series = append(g.series, name)
				g.base[name] = baseName(r)
			}
			if r.Kind == results.KindTrainStep {
				g.steps[name] = append(g.steps[name], r)
			} else {
				g.epochs[name] = append(g.epochs[name], r)
			}
		}
		slices.Sort(g.series)
		out = append(out, g)
	}
	return out
}

// trainLabeller names training series by what varies between them, so that
// a run that only varies the strategy reads "ring", "ps", not
// "ring ddp np=4", "ps ps-sync np=4".
func trainLabeller(rs []*results.Record) func(*results.Record) string {
	vary := func(f func(*results.Record) string) bool {
		for _, r := range rs[1:] {
			if f(r) != f(rs[0]) {
				return true
			}
		}
		return false
	}
	mode := func(r *results.Record) string { return r.Mode }
	np := func(r *results.Record) string { return fmt.Sprint(r.NP) }
	vMode, vNP := vary(mode), vary(np)
	return func(r *results.Record) string {
		name := seriesName(r)
		if r.Strategy == "" && r.Peer == "" && r.Mode != "" {
			name = r.Mode // the training mode is the only name it has
		} else if vMode && r.Mode != "" {
			name += " " + r.Mode
		}
		if vNP {
			name += fmt.Sprintf(" np=%d", r.NP)
		}
		return name
	}
}
