package plan

import (
	"fmt"
	"testing"
)

// TestWorkload checks which planned records name a workload: a gradients
// block's points, and the peers' points of those sizes, but not a size that
// a plain block measured first (it lies on the sweep's line), and never in
// the point's id.
func TestWorkload(t *testing.T) {
	const mlp = 2143272 // the mlp's one DDP bucket on MNIST input, in bytes
	const bucket = "mlp DDP bucket"
	for _, tc := range []struct {
		name string
		src  string
		want map[string]string // "strategy-or-peer/np/bytes" → workload, for every point
	}{
		{
			name: "a gradients block alone",
			src: `
gradients:
  - model: mlp
    strategies: [ring, tree]
    np: [2]
`,
			want: map[string]string{
				fmt.Sprintf("ring/2/%d", mlp): bucket, fmt.Sprintf("tree/2/%d", mlp): bucket,
			},
		},
		{
			name: "beside a sweep of sizes",
			src: `
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce]
    sizes: [4KiB]
gradients:
  - model: mlp
    strategies: [ring]
    np: [2]
`,
			want: map[string]string{"ring/2/4096": "", fmt.Sprintf("ring/2/%d", mlp): bucket},
		},
		{
			name: "a bucket size a plain block measured first stays plain",
			src: fmt.Sprintf(`
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce]
    sizes: [%d]
gradients:
  - model: mlp
    strategies: [ring, tree]
    np: [2]
`, mlp),
			want: map[string]string{fmt.Sprintf("ring/2/%d", mlp): "", fmt.Sprintf("tree/2/%d", mlp): bucket},
		},
		{
			name: "the peers' points of bucket sizes",
			src: `
peers: [mpi]
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce]
    sizes: [4KiB]
gradients:
  - model: mlp
    strategies: [ring]
    np: [2, 4]
`,
			want: map[string]string{
				"ring/2/4096": "", fmt.Sprintf("ring/2/%d", mlp): bucket, fmt.Sprintf("ring/4/%d", mlp): bucket,
				"mpi/2/4096": "", fmt.Sprintf("mpi/2/%d", mlp): bucket, fmt.Sprintf("mpi/4/%d", mlp): bucket,
			},
		},
		{
			name: "a peer's size that one strategy measures plain and another as a bucket is plain",
			src: fmt.Sprintf(`
peers: [mpi]
gradients:
  - model: mlp
    strategies: [tree]
    np: [2]
collectives:
  - strategies: [ring]
    np: [2]
    collectives: [allreduce]
    sizes: [%d]
`, mlp),
			want: map[string]string{
				fmt.Sprintf("ring/2/%d", mlp): "", fmt.Sprintf("tree/2/%d", mlp): bucket, fmt.Sprintf("mpi/2/%d", mlp): "",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := expandSrc([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, g := range e.Groups {
				for _, p := range g.Points {
					r := p.Record
					who := r.Strategy
					if r.Peer != "" {
						who = r.Peer
					}
					got[fmt.Sprintf("%s/%d/%d", who, r.NP, r.Bytes)] = r.Workload
					if p.ID != r.Point {
						t.Errorf("%s: record's point %q", p.ID, r.Point)
					}
				}
			}
			for k, w := range tc.want {
				if g, ok := got[k]; !ok || g != w {
					t.Errorf("%s: workload %q (planned %v), want %q", k, g, ok, w)
				}
			}
			for k := range got {
				if _, ok := tc.want[k]; !ok {
					t.Errorf("unexpected point %s", k)
				}
			}
		})
	}
}
