package job

import (
	"fmt"
	"strconv"
	"strings"
)

// HostsOf reads a layout of ranks on simulated hosts, for a local launch
// that lays its ranks out as if on several machines (Spec.Hosts): "2x2"
// is 2 hosts of 2 ranks, "3,1" a host of ranks 0–2 and one of rank 3.
// Ranks are numbered host after host. It returns each rank's host index,
// and an error unless the layout accounts for exactly np ranks.
func HostsOf(layout string, np int) ([]int, error) {
	sizes, err := layoutSizes(layout)
	if err != nil {
		return nil, err
	}
	var hostOf []int
	for h, k := range sizes {
		for range k {
			hostOf = append(hostOf, h)
		}
	}
	if len(hostOf) != np {
		return nil, fmt.Errorf("hosts %q lays out %d ranks, but np is %d", layout, len(hostOf), np)
	}
	return hostOf, nil
}

// LayoutRanks is the number of ranks a layout lays out (4 for "2x2" and
// "3,1"), so that a plan can give each world size its layouts.
func LayoutRanks(layout string) (int, error) {
	sizes, err := layoutSizes(layout)
	n := 0
	for _, k := range sizes {
		n += k
	}
	return n, err
}

// maxLayout bounds each number of a HOSTSxRANKS layout, so that a typo
// cannot make a layout of billions of ranks.
const maxLayout = 1 << 16

// layoutSizes is each host's number of ranks in a layout.
func layoutSizes(layout string) ([]int, error) {
	var sizes []int
	bad := func() ([]int, error) {
		return nil, fmt.Errorf("hosts %q: want HOSTSxRANKS (2x2) or the ranks of each host (3,1)", layout)
	}
	if h, k, ok := strings.Cut(layout, "x"); ok {
		hosts, err1 := strconv.Atoi(h)
		per, err2 := strconv.Atoi(k)
		if err1 != nil || err2 != nil || hosts < 1 || per < 1 || hosts > maxLayout || per > maxLayout {
			return bad()
		}
		for range hosts {
			sizes = append(sizes, per)
		}
	} else {
		for _, f := range strings.Split(layout, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || k < 1 {
				return bad()
			}
			sizes = append(sizes, k)
		}
	}
	return sizes, nil
}
