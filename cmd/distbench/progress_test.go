package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/distbench/distbench/harness/plan"
	"github.com/distbench/distbench/results"
)

func TestProgressDisplays(t *testing.T) {
	p := &plan.PlannedPoint{ID: "x", Desc: "allreduce ring np=4 16MiB float32"}
	ok := &results.Record{Kind: results.KindCollective, TimeUs: 1234.54, BusBWGBs: 1.234}
	bad := &results.Record{Kind: results.KindCollective, Error: "rank 1 died"}
	var lines bytes.Buffer
	lp := newLineProgress(&lines, io.Discard)
	lp.Start(4, 1)
	lp.Finished(p, ok)
	lp.Finished(p, bad)
	lp.Round(2, 2)
	lp.Finished(&plan.PlannedPoint{ID: "x", Desc: p.Desc, Round: 2, Rounds: 2}, ok)
	lp.Stop(false)
	want := "resuming: 1 of 4 done already\n" +
		"[2/4] allreduce ring np=4 16MiB float32: 1234.5 us, busbw 1.23 GB/s\n" +
		"[3/4] allreduce ring np=4 16MiB float32: FAILED: rank 1 died\n" +
		"round 2 of 2\n" +
		"[4/4] allreduce ring np=4 16MiB float32 (round 2/2): 1234.5 us, busbw 1.23 GB/s\n"
	if lines.String() != want {
		t.Errorf("lines:\n%s\nwant:\n%s", lines.String(), want)
	}

	// Bars are for terminals; forced to draw into a buffer, the finished
	// points and the workers' lines scroll above the bar.
	var bars bytes.Buffer
	bp := newBarProgress(&bars, true)
	bp.Start(2, 0)
	bp.Measuring(p)
	bp.Finished(p, ok)
	fmt.Fprintln(bp.Output(), "[rank 1] a worker's line")
	bp.Finished(p, ok)
	bp.Stop(false)
	for _, s := range []string{"[2/2] allreduce ring np=4 16MiB float32: 1234.5 us", "[rank 1] a worker's line", "2/2 done"} {
		if !strings.Contains(bars.String(), s) {
			t.Errorf("bars lack %q:\n%s", s, bars.String())
		}
	}
}
