package costmodel

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/distbench/distbench/internal/core"
)

// lockstep replays prog in collectivetest.ScheduleWorld's synchronous
// model: a message sent during step s is transferred in step s+1 at the
// earliest, and each directed link carries one message per step, the oldest
// first, then the lowest channel. It returns the transfers in
// ScheduleWorld.Format's words, so that a generated schedule can be
// compared with the real code's recording line for line. A header (Meta)
// reads "hdr", as a recording reads once headers are named (psHeaders).
func lockstep(prog Program, es int) string {
	n := prog.Size()
	type msg struct {
		src, dst, ch, sent int
		lo, bytes          int64
		order              int
		meta               bool
	}
	const never = 1 << 30
	done := make([][]int, n)   // per op: the step it completed in
	slots := make([][]int, n)  // per slot
	recv := map[[3]int][]int{} // (dst, src, ch): transfer steps in order
	lastSent := make([]map[[2]int]int, n)
	for r := range n {
		done[r] = make([]int, len(prog.Ops(r)))
		for i := range done[r] {
			done[r][i] = never
		}
		slots[r] = make([]int, prog.Slots(r))
		for i := range slots[r] {
			slots[r][i] = never
		}
		lastSent[r] = map[[2]int]int{}
	}
	queued := map[[2]int][]msg{}
	var b strings.Builder
	b.WriteString("# step s: the messages transferred in step s: src -> dst, channel, elements, bytes\n")
	total, order := 0, 0
	peer := func(r int, o *Op, p int32) int {
		if o.Rel {
			return core.Mod(r+int(p), n)
		}
		return int(p)
	}
	for step := 0; ; step++ {
		// Issue every op whose events are done by this step.
		for changed := true; changed; {
			changed = false
			for r := range n {
				ops := prog.Ops(r)
				for i := range ops {
					o := &ops[i]
					if done[r][i] != never {
						continue
					}
					ok := true
					for _, d := range o.Deps[:o.NDeps] {
						if d.Local {
							ok = ok && slots[r][d.Seq] <= step
							continue
						}
						got := recv[[3]int{r, peer(r, o, d.Peer), int(d.Ch)}]
						ok = ok && int(d.Seq) < len(got) && got[d.Seq] <= step
					}
					if o.Kind == Send {
						// The stream's previous send must have gone.
						for j := range i {
							p := &ops[j]
							if p.Kind == Send && peer(r, p, p.Peer) == peer(r, o, o.Peer) && p.Ch == o.Ch && done[r][j] == never {
								ok = false
							}
						}
					}
					if !ok {
						continue
					}
					done[r][i] = step
					if o.Slot >= 0 {
						slots[r][o.Slot] = step
					}
					if o.Kind == Send {
						dst := peer(r, o, o.Peer)
						l := [2]int{r, dst}
						queued[l] = append(queued[l], msg{r, dst, int(o.Ch), step, o.Lo, o.Bytes, order, o.Meta})
						order++
					}
					changed = true
				}
			}
		}
		var links [][2]int
		for l, q := range queued {
			if len(q) > 0 {
				links = append(links, l)
			}
		}
		if len(links) == 0 {
			break
		}
		slices.SortFunc(links, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
		fmt.Fprintf(&b, "step %d\n", step+1)
		for _, l := range links {
			q := queued[l]
			i := 0
			for j, m := range q {
				if m.sent < q[i].sent || m.sent == q[i].sent && m.ch < q[i].ch {
					i = j
				}
			}
			m := q[i]
			queued[l] = slices.Delete(q, i, i+1)
			k := [3]int{m.dst, m.src, m.ch}
			recv[k] = append(recv[k], step+1)
			el := fmt.Sprintf("x[%d:%d]", m.lo/int64(es), (m.lo+m.bytes)/int64(es))
			if m.meta {
				el = "hdr"
			}
			fmt.Fprintf(&b, "  %d -> %d  ch%d  %-8s %3d B\n", m.src, m.dst, m.ch, el, m.bytes)
			total++
		}
		_ = step
	}
	steps := strings.Count(b.String(), "\nstep ")
	fmt.Fprintf(&b, "# %d steps, %d messages\n", steps, total)
	return b.String()
}
