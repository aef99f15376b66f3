package ring_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/collectivetest"
	"github.com/distbench/distbench/internal/golden"
	"github.com/distbench/distbench/internal/transport"
)

// layouts name each rank's host, for a world of n ranks: even pairs,
// ranks interleaved over two hosts, one large host beside single ones
// (3+1 at np 4), everything on one host and every rank on its own (where
// hier is the flat algorithm).
var layouts = map[string]func(r, n int) string{
	"pairs":       func(r, n int) string { return fmt.Sprint("h", r/2) },
	"interleaved": func(r, n int) string { return fmt.Sprint("h", r%2) },
	"3+1s":        func(r, n int) string { return fmt.Sprint("h", max(0, r-2)) },
	"1+rest":      func(r, n int) string { return fmt.Sprint("h", min(r, 1)) },
	"one":         func(r, n int) string { return "h" },
	"each":        func(r, n int) string { return fmt.Sprint("h", r) },
}

func hostsOf(layout func(r, n int) string, n int) []string {
	hosts := make([]string, n)
	for r := range hosts {
		hosts[r] = layout(r, n)
	}
	return hosts
}

// hierWorld is memWorld with ranks laid out on hosts.
func hierWorld(t testing.TB, hosts []string, opts map[string]string) []collective.Comm {
	n := len(hosts)
	return collectivetest.MemWorld(t, "ring", n, opts, transport.MemOptions{MaxDelay: 20_000, Seed: 7 * uint64(n), Hosts: hosts})
}

// The hierarchical allreduce passes the suite at every world size from 1
// to 8, on every layout: the whole suite on even pairs, the short one on
// the others, and once with the whole-buffer ring across hosts. Under
// -race (several times slower) or -short, pairs and 3+1s run the short
// suite and the others none.
func TestConformanceHier(t *testing.T) {
	runs := []struct{ layout, inter string }{{"pairs", "rsag"}, {"3+1s", "whole"}}
	for name := range layouts {
		if name != "pairs" {
			runs = append(runs, struct{ layout, inter string }{name, "rsag"})
		}
	}
	for _, run := range runs {
		t.Run(run.layout+"/"+run.inter, func(t *testing.T) {
			short := run.layout != "pairs" || raceEnabled
			if (testing.Short() || raceEnabled) && short && run.layout != "3+1s" {
				t.Skip("-short or -race: pairs and 3+1s only")
			}
			collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
				return hierWorld(t, hostsOf(layouts[run.layout], n), map[string]string{"algo": "hier", "inter": run.inter, "chunk": "4KiB"})
			}, collectivetest.Options{WorldSizes: []int{1, 2, 3, 4, 5, 6, 7, 8}, Short: short})
		})
	}
}

// crossTransport counts the payload bytes each host sends to other hosts.
type crossTransport struct {
	*transport.Mem
	sent map[string]*atomic.Int64 // by the sender's host
}

func (x crossTransport) Send(ctx context.Context, peer int, tag uint64, data []byte) error {
	if me := x.HostOf(x.Rank()); x.HostOf(peer) != me {
		x.sent[me].Add(int64(len(data)))
	}
	return x.Mem.Send(ctx, peer, tag, data)
}

// The bytes that leave each host are what core.Hierarchy's design says:
// 2(m−1)/m × S for m hosts, whatever their sizes, where the flat ring
// sends 2(N−1)/N × S over each ring edge that leaves a host (1.5 S at 2
// hosts × 2 ranks).
func TestHierCrossHostBytes(t *testing.T) {
	const count = 3 << 20 // 12 MiB: three slices (core.Hierarchy.AllReduce)
	const size = 4 * count
	for _, tc := range []struct {
		hosts []string
		algo  string
		want  float64 // bytes each host sends to others
	}{
		{[]string{"a", "a", "b", "b"}, "hier", size},
		{[]string{"a", "a", "b", "b"}, "rsag", 1.5 * size},
		{[]string{"a", "b", "a", "b"}, "hier", size},
		{[]string{"a", "a", "a", "b"}, "hier", size},
		{[]string{"a", "a", "b", "b", "c", "c"}, "hier", 2 * 2.0 / 3 * size},
		{[]string{"a", "a", "a", "b", "b", "c"}, "hier", 2 * 2.0 / 3 * size},
	} {
		t.Run(fmt.Sprintf("%v/%s", tc.hosts, tc.algo), func(t *testing.T) {
			n := len(tc.hosts)
			trs := transport.NewMemWorld(n, transport.MemOptions{Hosts: tc.hosts})
			sent := map[string]*atomic.Int64{}
			for _, h := range tc.hosts {
				sent[h] = new(atomic.Int64)
			}
			comms := make([]collective.Comm, n)
			for r := range n {
				c, err := collective.New(t.Context(), "ring", collective.Config{Rank: r, Size: n,
					Transport: crossTransport{trs[r], sent}, Options: map[string]string{"algo": tc.algo}})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				comms[r] = c
			}
			errs := make([]error, n)
			var wg sync.WaitGroup
			for r, c := range comms {
				wg.Go(func() {
					errs[r] = c.AllReduce(t.Context(), collective.NewTensor(collective.Float32, count), collective.Sum)
				})
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			for h, got := range sent {
				if d := float64(got.Load())/tc.want - 1; d > 0.01 || d < -0.01 {
					t.Errorf("host %s sent %d bytes to other hosts, want %.0f ± 1%%", h, got.Load(), tc.want)
				}
			}
		})
	}
}

// TestScheduleHier records algo=hier on two layouts, 2 hosts × 2 ranks and
// 3 + 1, in testdata/allreduce-hier-*.txt (see TestScheduleAllReduce):
// the exchanges within hosts (ranks 0–1 and 2–3, or 0–2) and, between
// them, only the owners of a shard talking across hosts; on 3 + 1 rank 3
// carries all three shards across, one allreduce after another.
func TestScheduleHier(t *testing.T) {
	const count = 12
	for name, hosts := range map[string][]string{"2x2": {"a", "a", "b", "b"}, "3+1": {"a", "a", "a", "b"}} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := len(hosts)
				w := collectivetest.NewScheduleWorld(n)
				w.SetHosts(hosts)
				sched := w.RecordMax(t, w.Comms(t, "ring", map[string]string{"algo": "hier", "inter": "rsag"}), count, -1)
				got := fmt.Sprintf("# ring allreduce (max), algo=hier inter=rsag, hosts %v, %d float32 elements (%d B)\n", hosts, count, 4*count) + sched
				golden.Check(t, filepath.Join("testdata", "allreduce-hier-"+name+".txt"), []byte(got), *update)
			})
		})
	}
}

// A rank that never joins makes the others fail with errors that name the
// operation, its sequence number, the phase and the absent rank, as the
// flat algorithms' do; with the phases pipelined too, where the stages
// that stop because another failed do not hide its error.
func TestHierErrorsSayWhere(t *testing.T) {
	for _, count := range []int{1000, 3 << 20} { // one slice, three
		t.Run(fmt.Sprint(count), func(t *testing.T) { hierErrors(t, count) })
	}
}

func hierErrors(t *testing.T, count int) {
	const n, absent = 4, 3
	trs := transport.NewMemWorld(n, transport.MemOptions{Hosts: []string{"a", "a", "b", "b"}})
	errs := make(chan error, n-1)
	// The deadline must let every present rank join before it ends (the
	// diagnosis then follows the waits to rank 3): a second covers a
	// machine many times slower than usual, and the tensors are made first.
	comms := make([]collective.Comm, n-1)
	tensors := make([]collective.Tensor, n-1)
	for r := range n - 1 {
		c, err := collective.New(t.Context(), "ring", collective.Config{
			Rank: r, Size: n, Transport: trs[r], Timeout: time.Second,
			Options: map[string]string{"algo": "hier"},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		comms[r], tensors[r] = c, collective.NewTensor(collective.Float32, count)
	}
	for r, c := range comms {
		go func() { errs <- c.AllReduce(t.Context(), tensors[r], collective.Sum) }()
	}
	defer trs[absent].Close()
	for range n - 1 {
		err := <-errs
		if err == nil {
			t.Fatal("an allreduce with an absent rank succeeded")
		}
		for _, want := range []string{"ring: allreduce #0: hier 2+2: ", "rank 3"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: does not say %q", err, want)
			}
		}
	}
}
