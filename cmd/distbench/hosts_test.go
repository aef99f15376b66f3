package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunHosts lays 4 local ranks out as hosts of 3 and 1 (--hosts 3,1)
// and runs the hierarchical ring on them: the results are right, the
// records name the layout, and each rank sends what core.Hierarchy's
// design says, not what the flat ring would (1.5 S on every rank): the
// lone rank carries all three shards across, S; the others exchange two
// thirds of the buffer within their host twice and carry their shard
// across, 5/3 S.
func TestRunHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	code, stdout, stderr := runCLI(t, "run", "--strategy", "ring", "--np", "4", "--hosts", "3,1", "--opt", "algo=hier",
		"-b", "1MiB", "-e", "1MiB", "--iters", "3", "--warmup", "1", "-c", "1", "--json", jsonPath, "--timeout", "1m", "--inplace", "in")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "# Out of bounds values : 0 OK") {
		t.Errorf("wrong results:\n%s", stdout)
	}
	recs := readJSONL(t, jsonPath)
	if len(recs) != 1 {
		t.Fatalf("%d JSON records, want 1", len(recs))
	}
	r := recs[0]
	if r.Hosts != "3,1" || r.Wrong != 0 || len(r.WireSentBytes) != 4 {
		t.Fatalf("record: hosts %q, wrong %d, wire %v", r.Hosts, r.Wrong, r.WireSentBytes)
	}
	for rank, got := range r.WireSentBytes {
		want := 5.0 / 3 * float64(r.Bytes)
		if rank == 3 {
			want = float64(r.Bytes)
		}
		if math.Abs(got/want-1) > 0.01 {
			t.Errorf("rank %d sent %.0f bytes per operation, want %.0f", rank, got, want)
		}
	}
	code, _, stderr = runCLI(t, "run", "--np", "4", "--hosts", "2x3")
	if code == 0 || !strings.Contains(stderr, `hosts "2x3" lays out 6 ranks, but np is 4`) {
		t.Errorf("--hosts 2x3 at np 4: exit %d, %s", code, stderr)
	}
}
