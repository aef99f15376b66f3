package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/reports"
	"github.com/distbench/distbench/results"
)

// TestSlowRankEndToEnd: four worker processes, only rank 3's NIC shaped,
// to 10 Mbit/s, where 16 KiB takes 13 ms against tens of µs unshaped on
// loopback: a signal a hundred times the noise, which a machine ten times
// slower still shows. A broadcast's ranks need not wait for one another,
// so each rank's own time is its own link's; the report must name rank 3.
// An allreduce's ranks all wait for the slowest, so all take its time,
// and no rank may be called slow there.
func TestSlowRankEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errs := cli(t, "sweep", "--out", dir, "--strategy", "ring", "--np", "4", "--collective", "broadcast,allreduce",
		"--sizes", "16KiB", "--iters", "10", "--warmup", "2", "--link", "rank3=10Mbit")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Records) != 2 || run.Records[0].Collective != "broadcast" {
		t.Fatalf("%d records", len(run.Records))
	}
	if rank, ratio, sig := results.SlowestRank(&run.Records[1]); sig {
		t.Errorf("allreduce: rank %d called slow (%.2f× the median rank, medians %v); every rank waits for the slowest",
			rank, ratio, run.Records[1].RankMedianUs)
	}
	r := &run.Records[0]
	if r.Link != "rank3=10Mbit" || len(r.RankHosts) != 4 || len(r.RankPIDs) != 4 || len(r.RankSamplesUs) != 4 {
		t.Fatalf("link %q, hosts %v, pids %v, samples of %d ranks", r.Link, r.RankHosts, r.RankPIDs, len(r.RankSamplesUs))
	}
	rank, ratio, sig := results.SlowestRank(r)
	t.Logf("rank medians %v µs: slowest rank %d, %.1f× the median rank, significant %v", r.RankMedianUs, rank, ratio, sig)
	if rank != 3 || !sig || ratio < 3 {
		t.Errorf("slowest rank %d, ratio %.2f, significant %v; want rank 3, well beyond the noise", rank, ratio, sig)
	}
	md, err := os.ReadFile(filepath.Join(dir, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if want := "Slowest rank beyond the noise: rank 3 on host " + host[:min(len(host), 64)]; !strings.Contains(string(md), want) {
		t.Errorf("report lacks %q:\n%s", want, md)
	}
}
