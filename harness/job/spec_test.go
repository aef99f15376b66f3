package job

import (
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/internal/linkspec"
	_ "github.com/distbench/distbench/strategies/ps" // Validate looks strategies up
	_ "github.com/distbench/distbench/strategies/ring"
)

func TestSpecValidate(t *testing.T) {
	good := func() *Spec {
		return &Spec{Strategy: "ring", NP: 2, Timeout: time.Second, Iters: 1,
			Points: []Point{{Collective: "allreduce", Bytes: 64, DType: "float32", Op: "sum"}}}
	}
	tests := []struct {
		name   string
		mutate func(*Spec)
		want   string
	}{
		{"good", func(*Spec) {}, ""},
		{"strategy", func(s *Spec) { s.Strategy = "nope" }, `unknown strategy "nope"`},
		{"np", func(s *Spec) { s.NP = 0 }, "np 0"},
		{"iters", func(s *Spec) { s.Iters = 0 }, "iters 0"},
		{"timeout", func(s *Spec) { s.Timeout = 0 }, "timeout"},
		{"collective", func(s *Spec) { s.Points[0].Collective = "allreduse" }, `unknown collective "allreduse"`},
		{"dtype", func(s *Spec) { s.Points[0].DType = "float7" }, `unknown dtype "float7"`},
		{"op", func(s *Spec) { s.Points[0].Op = "xor" }, `unknown op "xor"`},
		{"multiple", func(s *Spec) { s.Points[0].Bytes = 6 }, "not a multiple"},
		{"root", func(s *Spec) { s.Points[0].Root = 2 }, "root 2 out of range"},
		{"option", func(s *Spec) { s.Options = map[string]string{"bogus": "1"} }, `unknown option "bogus"`},
		{"timeout too short", func(s *Spec) { s.Timeout = time.Nanosecond }, "timeout 1ns: too short (accepted: 1s or more)"},
		{"size too large", func(s *Spec) { s.Points[0].Bytes = 1<<50 + 4 }, "size 1125899906842628 bytes: out of range (accepted: 0 to 1125899906842624, 1PiB)"},
		{"servers past the process limit", func(s *Spec) {
			s.Strategy, s.NP, s.Options = "ps", 1, map[string]string{"placement": "dedicated", "servers": "520"}
		}, "np 1 and 520 dedicated servers: 521 processes, but at most 512 local processes (accepted: np plus servers up to 512)"},
		{"a server a worker past the process limit", func(s *Spec) {
			s.Strategy, s.NP, s.Options = "ps", 300, map[string]string{"placement": "dedicated"}
		}, "np 300 and 300 dedicated servers: 600 processes"},
		{"servers at the process limit", func(s *Spec) {
			s.Strategy, s.NP, s.Options = "ps", 256, map[string]string{"placement": "dedicated"}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good()
			tt.mutate(s)
			err := s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestLinkFor(t *testing.T) {
	s := &Spec{Strategy: "ring", NP: 4, Iters: 1, Timeout: time.Minute, Link: "10Gbit,25us;rank3=1Gbit;rank2=none"}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for rank, want := range map[int]*linkspec.Link{
		0: {Rate: 10e9, Latency: 25 * time.Microsecond}, -1: {Rate: 10e9, Latency: 25 * time.Microsecond},
		3: {Rate: 1e9}, 2: nil,
	} {
		got, err := s.LinkFor(rank)
		if err != nil || (got == nil) != (want == nil) || (got != nil && *got != *want) {
			t.Errorf("LinkFor(%d) = %v, %v; want %v", rank, got, err, want)
		}
	}
	s.NP = 3
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "shapes rank 3, but np 3 has ranks 0..2") {
		t.Errorf("np 3 with rank 3 shaped: %v", err)
	}
}
