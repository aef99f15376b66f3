package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
)

// TestTrainProgress drives the terminal status line with step records: the
// step of the epoch, the throughput, and the time left once the epoch's
// length is known, from a step limit or the first epoch's end.
func TestTrainProgress(t *testing.T) {
	step := func(epoch, global int) *results.Record {
		return &results.Record{Kind: results.KindTrainStep, Epoch: epoch, Step: global, ImagesPerS: 1000, ComputeMs: 40, ExposedMs: 10}
	}
	for _, tt := range []struct {
		name     string
		maxSteps int
		recs     []*results.Record
		want     string // the last line
	}{
		{"first epoch, length unknown", 0, []*results.Record{step(1, 1), step(1, 2)}, "epoch 1: step 2, 1000 images/s"},
		{"a step limit", 10, []*results.Record{step(1, 1), step(1, 2)}, "epoch 1: step 2/10, 1000 images/s, about 400ms left in the epoch"},
		{"learned from the first epoch", 0, []*results.Record{step(1, 1), step(1, 2), step(1, 3), step(1, 4),
			{Kind: results.KindTrainEpoch, Epoch: 1, Step: 4}, step(2, 5)}, "epoch 2: step 1/4, 1000 images/s, about 150ms left in the epoch"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := &trainProgress{w: &buf, maxSteps: tt.maxSteps}
			for _, r := range tt.recs {
				if r.Kind == results.KindTrainEpoch {
					p.epochDone(r)
				} else {
					p.step(r)
				}
			}
			lines := strings.Split(buf.String(), clearLine)
			if got := lines[len(lines)-1]; got != tt.want {
				t.Errorf("last line %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRunStatus(t *testing.T) {
	for _, tt := range []struct {
		done, points, cycles int
		want                 string
	}{
		{1, 4, 1, "# 1 of 4 row(s) done; measuring the next…"},
		{5, 4, 3, "# 1 of 4 row(s) done in cycle 2 of 3; measuring the next…"},
		{9, 4, 0, "# 1 of 4 row(s) done in cycle 3; measuring the next…"},
		{2, 0, 1, "# 2 row(s) done; measuring the next…"},
	} {
		if got := runStatus(tt.done, tt.points, tt.cycles); got != tt.want {
			t.Errorf("runStatus(%d, %d, %d) = %q, want %q", tt.done, tt.points, tt.cycles, got, tt.want)
		}
	}
}
