package plan

import (
	"fmt"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/cuda"
)

// checkDevices is a block's devices, checked: [""] (host memory) when it
// names none, and "" for cpu, so that host points keep the ids and records
// they had before blocks named devices. Whether this machine has the
// device is for the launch to say (job.Spec.Validate), as for strategies.
func checkDevices(devices []string, where string) ([]string, error) {
	if len(devices) == 0 {
		return []string{""}, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, d := range devices {
		dev, err := collective.ParseDevice(d)
		if err != nil {
			return nil, fmt.Errorf("%s: devices: %w", where, err)
		}
		name := dev.String()
		if dev == collective.CPU {
			name = ""
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

// deviceUnavailable says why a device cannot be used here, as unavailable
// does for a strategy: its launches are then skipped, saying so.
func deviceUnavailable(device string) string {
	if device != collective.CUDA.String() {
		return ""
	}
	if err := cuda.Available(); err != nil {
		return fmt.Sprintf("device %s cannot be used here: %v", device, err)
	}
	return ""
}

// cross is every (link, device) pair, links outermost.
func cross(links, devices []string) [][2]string {
	var out [][2]string
	for _, l := range links {
		for _, d := range devices {
			out = append(out, [2]string{l, d})
		}
	}
	return out
}
