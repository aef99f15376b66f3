package transport

import (
	"testing"
)

// Every rank learns every rank's host identity as the mesh forms, and a
// DISTBENCH_HOST_ID given to a process becomes its identity.
func TestTCPHostOf(t *testing.T) {
	hosts := []string{"a", "b", "a", ""}
	t.Setenv(EnvHostID, "")
	m := newMesh(t, len(hosts), func(rank int, o *TCPOptions) { o.HostID = hosts[rank] })
	def := HostIdentity()
	want := []string{"a", "b", "a", def} // "" takes the default
	for r, tr := range m.ts {
		for peer := range hosts {
			if got := tr.HostOf(peer); got != want[peer] {
				t.Errorf("rank %d: HostOf(%d) = %q, want %q", r, peer, got, want[peer])
			}
		}
		if got := tr.HostOf(len(hosts)); got != "" {
			t.Errorf("rank %d: HostOf(out of range) = %q, want \"\"", r, got)
		}
	}
}

func TestHostIdentity(t *testing.T) {
	t.Setenv(EnvHostID, "")
	id := HostIdentity()
	if id == "" || id != HostIdentity() {
		t.Fatalf("HostIdentity() = %q, then %q: want one stable non-empty name", id, HostIdentity())
	}
	t.Setenv(EnvHostID, "rack1-node7")
	if got := HostIdentity(); got != "rack1-node7" {
		t.Fatalf("with %s set, HostIdentity() = %q", EnvHostID, got)
	}
}

func TestMemHostOf(t *testing.T) {
	w := NewMemWorld(3, MemOptions{Hosts: []string{"x", "y", "x"}})
	if w[1].HostOf(0) != "x" || w[0].HostOf(1) != "y" || w[2].HostOf(2) != "x" || w[0].HostOf(3) != "" {
		t.Fatal("Mem.HostOf does not follow MemOptions.Hosts")
	}
	if NewMemWorld(2, MemOptions{})[0].HostOf(1) != "mem" {
		t.Fatal("Mem without Hosts: every rank should share one host")
	}
}
