package job

import (
	"strings"
	"testing"
	"time"

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
