package plan

import (
	"strings"
	"testing"
)

// Each transport of a block is a launch of its own, whose points' ids
// name it (TCP's keep the ids they had before there was a choice).
func TestPlanTransports(t *testing.T) {
	p, err := Parse([]byte("collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: [4KiB]\n    transports: [tcp, shm, auto]\n"))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"allreduce/ring/np=2/bytes=4096/float32/sum/root=0/inplace=true",
		"allreduce/ring/np=2/bytes=4096/float32/sum/root=0/inplace=true/mesh=shm",
		"allreduce/ring/np=2/bytes=4096/float32/sum/root=0/inplace=true/mesh=auto",
	}
	ids := exp.IDs()
	if strings.Join(ids, "\n") != strings.Join(want, "\n") {
		t.Errorf("ids\n%s\nwant\n%s", strings.Join(ids, "\n"), strings.Join(want, "\n"))
	}
	for i, g := range exp.Groups {
		if r := g.Points[0].Record; r.Transport != []string{"tcp", "shm", "auto"}[i] {
			t.Errorf("launch %d records transport %q", i, r.Transport)
		}
	}
	_, err = mustExpand(t, "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: [4KiB]\n    transport: [udp]\n")
	if err == nil || !strings.Contains(err.Error(), `unknown transport "udp" (accepted: auto, tcp, shm)`) {
		t.Errorf("a bad transport: %v", err)
	}
}

func mustExpand(t *testing.T, src string) (*Expanded, error) {
	t.Helper()
	p, err := Parse([]byte(src))
	if err != nil {
		return nil, err
	}
	return p.Expand()
}
