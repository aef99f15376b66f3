package plan

import (
	"strings"
	"testing"
)

// TestFlagKeys: a plan written with the command line's names parses to
// the same plan as one in the plan's own keys.
func TestFlagKeys(t *testing.T) {
	tests := []struct{ name, flags, plan string }{
		{"singular names",
			"collectives:\n  - strategy: [ring]\n    np: [2]\n    collective: [allreduce]\n    sizes: [4KiB]\n    dtype: [float32]\n    op: [sum]\n    link: ['', 1g]\n    opt: {chunk: 64KiB}\n",
			"collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: [4KiB]\n    dtypes: [float32]\n    ops: [sum]\n    links: ['', 1g]\n    options: {chunk: 64KiB}\n"},
		{"dashes",
			"time-budget: 2s\nskip-unavailable: true\ncollectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: [4KiB]\n",
			"time_budget: 2s\nskip_unavailable: true\ncollectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: [4KiB]\n"},
		{"size range flags",
			"collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    minbytes: 4KiB\n    maxbytes: 1MiB\n    stepfactor: 4\n",
			"collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: {min: 4KiB, max: 1MiB, factor: 4}\n"},
		{"size step flag",
			"collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    minbytes: 4KiB\n    maxbytes: 16KiB\n    stepbytes: 4KiB\n",
			"collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: {min: 4KiB, max: 16KiB, step: 4KiB}\n"},
		{"training dashes",
			"training:\n  - model: lenet\n    dataset: mnist\n    strategy: [ring]\n    np: [2]\n    steps: 5\n    lr-schedule: cosine\n    bucket-cap-mb: 1\n",
			"training:\n  - model: lenet\n    dataset: mnist\n    strategies: [ring]\n    np: [2]\n    steps: 5\n    lr_schedule: cosine\n    bucket_cap_mb: 1\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.flags))
			if err != nil {
				t.Fatalf("flag-style plan: %v", err)
			}
			want, err := Parse([]byte(tc.plan))
			if err != nil {
				t.Fatalf("plan-style plan: %v", err)
			}
			g, _ := got.Marshal()
			w, _ := want.Marshal()
			if string(g) != string(w) {
				t.Errorf("flag-style plan parsed to\n%s\nwant\n%s", g, w)
			}
			if _, err := got.Expand(); err != nil {
				t.Errorf("expand: %v", err)
			}
		})
	}
}

func TestFlagKeysBad(t *testing.T) {
	const block = "\n    np: [2]\n    collectives: [allreduce]\n"
	tests := []struct{ name, src, want string }{
		{"both spellings", "collectives:\n  - strategies: [ring]\n    strategy: [tree]" + block + "    sizes: [4K]\n",
			`line 3: plan.collectives[0]: "strategy" is strategies, given already at line 2`},
		{"sizes and range flags", "collectives:\n  - strategies: [ring]" + block + "    sizes: [4K]\n    minbytes: 1K\n    maxbytes: 2K\n",
			"line 6: plan.collectives[0]: sizes and minbytes: give the sizes one way"},
		{"range flag misspelt", "collectives:\n  - strategies: [ring]" + block + "    minbyte: 1K\n", `line 5: plan.collectives[0]: unknown key "minbyte"`},
		// A type error in a renamed plan still names its line.
		{"type error after rename", "time-budget: soon\ncollectives:\n  - strategies: [ring]" + block + "    sizes: [4K]\n", "line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v; want one line containing %q", err, tc.want)
			}
		})
	}
}
