package rendezvous

import (
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		in   string
		want string // space-separated, or "error: ..." with a fragment of the error
	}{
		{"node01", "node01"},
		{"node[01-04,07]", "node01 node02 node03 node04 node07"},
		{"node[8-10]", "node8 node9 node10"},
		{"node[08-10]", "node08 node09 node10"},
		{"n[1-2]-ib[3-4]", "n1-ib3 n1-ib4 n2-ib3 n2-ib4"},
		{"gpu-[1-3]-a", "gpu-1-a gpu-2-a gpu-3-a"},
		{"a,b[1-2],c", "a b1 b2 c"},
		{"login1,node[001-002]", "login1 node001 node002"},
		{"rack[1,3]n[0-1]", "rack1n0 rack1n1 rack3n0 rack3n1"},
		{"10.0.0.[1-2]", "10.0.0.1 10.0.0.2"},
		{"[1-2]", "1 2"},
		{"gpu-[1-3]-[a,b]", "error: not a number"},
		{"node[1-", "error: a [ without its ]"},
		{"node]1", "error: a ] without its ["},
		{"node[[1]]", "error: nested"},
		{"node[3-1]", "error: backwards"},
		{"node[]", "error: not a number"},
		{"a,,b", "error: empty host name"},
		{"", "error: empty host name"},
		{"n[0-999999999]", "error: more than 65536 hosts"},
	}
	for _, tt := range tests {
		got, err := ExpandHostlist(tt.in)
		if msg, isErr := strings.CutPrefix(tt.want, "error: "); isErr {
			if err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("ExpandHostlist(%q) = %q, %v; want an error with %q", tt.in, got, err, msg)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("ExpandHostlist(%q) = %q, %v; want %s", tt.in, got, err, tt.want)
			continue
		}
		first, err := FirstHost(tt.in)
		if err != nil || first != got[0] {
			t.Errorf("FirstHost(%q) = %q, %v; want %q", tt.in, first, err, got[0])
		}
	}
	// The first host of a list too long to expand is still found.
	if h, err := FirstHost("n[0-999999999]"); err != nil || h != "n0" {
		t.Errorf("FirstHost of a huge list = %q, %v", h, err)
	}
}

// FuzzHostlist: no panic; FirstHost agrees with the expansion's first name;
// every expanded name is free of brackets and commas.
func FuzzHostlist(f *testing.F) {
	for _, s := range []string{"node[01-04,07]", "n[1-2]-ib[3-4]", "a,b[1-2]", "x[9-10]y", "[", "a[1-3,5]b[07-08],c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandHostlist(s)
		first, ferr := FirstHost(s)
		if err != nil {
			return
		}
		if len(hosts) == 0 || len(hosts) > maxHosts {
			t.Fatalf("%q: %d hosts", s, len(hosts))
		}
		if ferr != nil || first != hosts[0] {
			t.Fatalf("%q: FirstHost = %q, %v; expansion starts %q", s, first, ferr, hosts[0])
		}
		for _, h := range hosts {
			if strings.ContainsAny(h, "[],") {
				t.Fatalf("%q: host %q", s, h)
			}
		}
	})
}
