package nn

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseSchedule(t *testing.T) {
	const base, total = 0.1, 90
	tests := []struct {
		spec string
		want Schedule
	}{
		{"", Constant(base)},
		{"constant", Constant(base)},
		{"step:30:0.1", StepLR{Base: base, StepSize: 30, Gamma: 0.1}},
		{"step:1:1", StepLR{Base: base, StepSize: 1, Gamma: 1}},
		{"step:200:0.5", StepLR{Base: base, StepSize: 200, Gamma: 0.5}}, // beyond the run: allowed
		{"multistep:30,60,80:0.1", MultiStepLR{Base: base, Milestones: []int{30, 60, 80}, Gamma: 0.1}},
		{"multistep:30, 60:0.2", MultiStepLR{Base: base, Milestones: []int{30, 60}, Gamma: 0.2}},
		{"multistep:5:0.1", MultiStepLR{Base: base, Milestones: []int{5}, Gamma: 0.1}},
		{"cosine", CosineLR{Base: base, Total: total}},
		{"cosine:0.001", CosineLR{Base: base, Min: 0.001, Total: total}},
		{"cosine:0", CosineLR{Base: base, Total: total}},
	}
	for _, tc := range tests {
		got, err := ParseSchedule(tc.spec, base, total)
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %#v, want %#v", tc.spec, got, tc.want)
		}
	}

	bad := []struct {
		spec  string
		base  float64
		total int
		want  string // in the error, beside the accepted forms
	}{
		{"exp:0.9", base, total, `unknown schedule "exp"`},
		{"Step:30:0.1", base, total, `unknown schedule "Step"`},
		{"constant:0.1", base, total, "constant takes no arguments"},
		{"step", base, total, "want step:EVERY:GAMMA"},
		{"step:30", base, total, "want step:EVERY:GAMMA"},
		{"step:30:0.1:2", base, total, "want step:EVERY:GAMMA"},
		{"step:0:0.1", base, total, `EVERY "0" must be a positive integer`},
		{"step:-5:0.1", base, total, `EVERY "-5" must be a positive integer`},
		{"step:1.5:0.1", base, total, `EVERY "1.5" must be a positive integer`},
		{"step:0.1:30", base, total, `EVERY "0.1" must be a positive integer`},
		{"step:30:0", base, total, `GAMMA "0" must be a factor in (0, 1]`},
		{"step:30:10", base, total, `GAMMA "10" must be a factor in (0, 1]`},
		{"step:30:NaN", base, total, `GAMMA "NaN" must be a factor in (0, 1]`},
		{"step:30:", base, total, `GAMMA "" must be a factor in (0, 1]`},
		{"multistep:30,60", base, total, "want multistep:M1,M2,...:GAMMA"},
		{"multistep::0.1", base, total, `milestone "" must be a positive integer`},
		{"multistep:0,30:0.1", base, total, `milestone "0" must be a positive integer`},
		{"multistep:30,x:0.1", base, total, `milestone "x" must be a positive integer`},
		{"multistep:30,30:0.1", base, total, "milestone 30 after 30: milestones must be strictly increasing"},
		{"multistep:60,30:0.1", base, total, "milestone 30 after 60: milestones must be strictly increasing"},
		{"multistep:30,60:-0.1", base, total, `GAMMA "-0.1" must be a factor in (0, 1]`},
		{"cosine:", base, total, `MIN "" must be a rate in [0, 0.1)`},
		{"cosine:-0.01", base, total, `MIN "-0.01" must be a rate in [0, 0.1)`},
		{"cosine:0.1", base, total, `MIN "0.1" must be a rate in [0, 0.1)`},
		{"cosine:Inf", base, total, `MIN "Inf" must be a rate in [0, 0.1)`},
		{"cosine:0:1", base, total, "want cosine or cosine:MIN"},
		{"cosine", base, 0, "cosine anneals over the run, which has 0 steps"},
		{"constant", 0, total, "base rate 0 must be positive and finite"},
		{"step:30:0.1", math.Inf(1), total, "base rate +Inf must be positive and finite"},
	}
	for _, tc := range bad {
		s, err := ParseSchedule(tc.spec, tc.base, tc.total)
		if err == nil {
			t.Errorf("%q (base %v, total %d): accepted as %#v", tc.spec, tc.base, tc.total, s)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "(accepted: "+ScheduleSyntax+")") || strings.Contains(msg, "\n") {
			t.Errorf("%q: error %q, want one line with %q and the accepted forms", tc.spec, msg, tc.want)
		}
	}
}

// TestParsedSchedulesAsTorch checks the parsed schedules' rates epoch by
// epoch, as torch's schedulers stepped once per epoch give them.
func TestParsedSchedulesAsTorch(t *testing.T) {
	tests := []struct {
		spec string
		want []float64 // LR(0), LR(1), …
	}{
		{"step:2:0.1", []float64{1, 1, 0.1, 0.1, 0.01}},
		{"multistep:1,3:0.5", []float64{1, 0.5, 0.5, 0.25, 0.25}},
		// CosineAnnealingLR(T_max=4, eta_min=0.2): 0.2 + 0.8(1+cos(πe/4))/2.
		{"cosine:0.2", []float64{1, 0.8828427124746, 0.6, 0.3171572875254, 0.2}},
	}
	for _, tc := range tests {
		s, err := ParseSchedule(tc.spec, 1, 4)
		if err != nil {
			t.Fatal(err)
		}
		for e, want := range tc.want {
			if got := s.LR(e); math.Abs(got-want) > 1e-12 {
				t.Errorf("%s: LR(%d) = %.13g, want %.13g", tc.spec, e, got, want)
			}
		}
	}
}
