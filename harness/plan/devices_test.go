package plan

import (
	"strings"
	"testing"
)

// A block's devices are one launch each; cpu keeps the host's ids, cuda's
// carry the device, and an unknown name says which are accepted.
func TestDevices(t *testing.T) {
	tests := []struct {
		name, devices string
		want          []string // the launches' devices, in order
		err           string
	}{
		{"default", "", []string{""}, ""},
		{"cpu", "devices: [cpu]", []string{""}, ""},
		{"both", "devices: [cpu, cuda, cuda]", []string{"", "cuda"}, ""},
		{"unknown", "devices: [tpu]", nil, `devices: unknown device "tpu" (accepted: cpu, cuda)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "collectives:\n  - strategies: [ring]\n    np: [2]\n    collectives: [allreduce]\n    sizes: [1KiB]\n"
			if tc.devices != "" {
				src += "    " + tc.devices + "\n"
			}
			p, err := Parse([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			exp, err := p.Expand()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Expand() = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range exp.Groups {
				got = append(got, g.Spec.Device)
				id := g.Points[0].ID
				if hasDev := strings.Contains(id, "/device="); hasDev != (g.Spec.Device != "") {
					t.Errorf("point id %q for device %q", id, g.Spec.Device)
				}
				if g.Points[0].Record.Device != g.Spec.Device {
					t.Errorf("record's device %q, spec's %q", g.Points[0].Record.Device, g.Spec.Device)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("launches on devices %q, want %q", got, tc.want)
			}
		})
	}
}
