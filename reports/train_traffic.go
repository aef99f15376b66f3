package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/distbench/distbench/results"
)

// Who carries a training step's traffic, and who waits. The step-time table
// says how much of a step was communication; this says where it went:
// rank 0's bytes per step and its share of all the ranks' traffic (1/n
// where every rank moves as much, as in a ring allreduce; more where
// rank 0 is a hub, as DataParallel's master is for its scatter and gather),
// the longest any other rank waited a step, and, for mode dp, each of
// DataParallel's transfers. The figures are workloads/train's epoch
// records' (wire bytes counted over the epoch's steps; waits and transfers
// as medians per step), from the last epoch that has them.

// trafficRow is one series' figures.
type trafficRow struct {
	name                string
	rec                 *results.Record // the first step record: strategy, mode, np, link
	stepMs              float64         // mean compute + exposed comm, as the step-time table
	masterBytes, allB   float64         // bytes per step: rank 0's sent+received, every rank's
	share               float64         // rank 0's share of allB
	masterWait, maxWait float64         // ms a step: rank 0's, the longest other rank's
	transfers           map[string]float64
}

var dpTransferOrder = []string{"broadcast", "scatter", "gather", "scatter_grad", "reduce"}

func trafficRows(g *trainGroup) []trafficRow {
	var rows []trafficRow
	for _, name := range g.series {
		var ep *results.Record
		for _, e := range g.epochs[name] {
			if e.HasWire() || len(e.RankExposedMs) > 0 {
				ep = e
			}
		}
		steps := g.steps[name]
		if ep == nil || len(steps) == 0 {
			continue
		}
		row := trafficRow{name: name, rec: steps[0], transfers: ep.TransferMs}
		for _, s := range steps {
			row.stepMs += (s.ComputeMs + s.ExposedMs) / float64(len(steps))
		}
		if ep.HasWire() && len(ep.WireRecvBytes) == len(ep.WireSentBytes) {
			row.masterBytes = ep.WireSentBytes[0] + ep.WireRecvBytes[0]
			for i := range ep.WireSentBytes {
				row.allB += ep.WireSentBytes[i] + ep.WireRecvBytes[i]
			}
			row.share = ep.RankTrafficShare(0)
		}
		if len(ep.RankExposedMs) > 0 {
			row.masterWait = ep.RankExposedMs[0]
			for _, w := range ep.RankExposedMs[1:] {
				row.maxWait = max(row.maxWait, w)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// writeTraffic writes the table, and a line for each dp series with a ddp
// series through the same strategy, world size and link to set it beside.
func (rp *report) writeTraffic(g *trainGroup) error {
	rows := trafficRows(g)
	if len(rows) == 0 {
		return nil
	}
	rp.m.h(4, "Traffic and waiting by rank")
	rp.m.text("Per step: rank 0's bytes sent plus received and its share of all ranks' (1/n where every rank moves as much; " +
		"DataParallel's master (mode dp) is the hub of its scatter and gather, and of its broadcast and reduce as far as the " +
		"strategy runs them through rank 0); how long rank 0 and the longest-waiting other rank spent blocked on communication " +
		"(medians per step; in dp the other ranks wait for the master's transfers, loss and update); and dp's transfers, " +
		"each timed on rank 0 from its call to its return (so it includes waiting for the slowest rank to join it).")
	t := &table{header: []string{"series", "step (ms)", "rank 0 (MB/step)", "all ranks (MB/step)", "rank 0's share",
		"rank 0 waits (ms)", "others wait, most (ms)", "transfers (ms)"}}
	for _, r := range rows {
		share, mb, all := "—", "—", "—"
		if r.allB > 0 {
			share, mb, all = fmt.Sprintf("%.0f%% (1/%d = %.0f%%)", 100*r.share, r.rec.NP, 100/float64(r.rec.NP)), num(r.masterBytes/1e6), num(r.allB/1e6)
		}
		t.add(r.name, num(r.stepMs), mb, all, share, num(r.masterWait), num(r.maxWait), transfersText(r.transfers))
	}
	if err := rp.m.table(t); err != nil {
		return err
	}
	for _, line := range dpBesideDDP(rows) {
		rp.m.text(line)
	}
	return nil
}

// transfersText lists dp's transfers in the order a step runs them, any
// others after, sorted.
func transfersText(tr map[string]float64) string {
	if len(tr) == 0 {
		return ""
	}
	var parts []string
	for _, k := range dpTransferOrder {
		if v, ok := tr[k]; ok {
			parts = append(parts, k+" "+num(v))
		}
	}
	var rest []string
	for k := range tr {
		if !slices.Contains(dpTransferOrder, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		parts = append(parts, k+" "+num(tr[k]))
	}
	return strings.Join(parts, ", ")
}

// dpBesideDDP sets each dp series beside the ddp series of the same
// strategy, world size and link: step time ratio, rank 0's share, waits.
func dpBesideDDP(rows []trafficRow) []string {
	var out []string
	for _, dp := range rows {
		if dp.rec.Mode != "dp" {
			continue
		}
		for _, ddp := range rows {
			if ddp.rec.Mode != "ddp" || ddp.rec.Strategy != dp.rec.Strategy || ddp.rec.NP != dp.rec.NP || ddp.rec.Link != dp.rec.Link || ddp.stepMs <= 0 {
				continue
			}
			s := fmt.Sprintf("%s against %s: a step of %s ms against %s ms (%s×)", dp.name, ddp.name, num(dp.stepMs), num(ddp.stepMs), num(dp.stepMs/ddp.stepMs))
			if dp.allB > 0 && ddp.allB > 0 {
				s += fmt.Sprintf("; rank 0 moved %.0f%% of the bytes against %.0f%%", 100*dp.share, 100*ddp.share)
			}
			s += fmt.Sprintf("; the other ranks waited up to %s ms a step against %s ms.", num(dp.maxWait), num(ddp.maxWait))
			if dp.stepMs > ddp.stepMs {
				s += " dp learns what ddp learns (the gradient of the same global batch); its extra time is communication that nothing overlaps, " +
					"and the other ranks' wait for the master."
			} else {
				s += " dp was not slower here: its transfers cost no more than ddp's exposed allreduce."
			}
			out = append(out, s)
		}
	}
	return out
}
