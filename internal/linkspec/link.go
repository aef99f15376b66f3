package linkspec

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Link models a cluster node's network interface: a rate shared by all of a
// process's links in each direction, and a one-way latency per link.
//
// Over TCP (TCPOptions.Link), each process paces what it sends through an
// egress token bucket at Rate and what it reads through an ingress bucket at
// Rate, both shared by all its connections, so one sender talking to three
// peers gets Rate in all, as does a receiver that three peers talk to. A
// message becomes visible to its receiver Latency after its last byte has
// been read, that is no earlier than send time + serialization at Rate +
// Latency. Latency is a delay line, not a stop-and-wait: a link keeps Rate
// whatever its latency.
//
// The zero Link shapes nothing.
type Link struct {
	// Rate is the NIC's rate in bits per second, each way; 0 means unlimited.
	Rate int64
	// Latency is the one-way delay of every link; 0 means none.
	Latency time.Duration
}

// linkPresets are the names ParseLink accepts for common networks. The NIC
// presets' latencies are typical one-way figures inside a data-centre rack.
var linkPresets = map[string]Link{
	"1g":   {Rate: 1e9, Latency: 50 * time.Microsecond},
	"10g":  {Rate: 10e9, Latency: 20 * time.Microsecond},
	"25g":  {Rate: 25e9, Latency: 10 * time.Microsecond},
	"100g": {Rate: 100e9, Latency: 5 * time.Microsecond},
	"lan":  {Rate: 10e9, Latency: 50 * time.Microsecond},
	"wan":  {Rate: 1e9, Latency: 10 * time.Millisecond},
}

// LinkPresets returns the preset names ParseLink accepts, sorted.
func LinkPresets() []string {
	names := make([]string, 0, len(linkPresets))
	for n := range linkPresets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var rateUnits = []struct {
	name  string
	scale int64
}{
	{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1},
	{"tbps", 1e12}, {"gbps", 1e9}, {"mbps", 1e6}, {"kbps", 1e3}, {"bps", 1},
}

func linkSyntax() string {
	return "accepted: RATE, RATE,LATENCY or PRESET[,LATENCY]; RATE is a number with bit, kbit, Mbit, Gbit or Tbit " +
		"(bits per second, also written bps, Mbps, Gbps), or unlimited; LATENCY is a Go duration such as 25us or 10ms; " +
		"PRESET is one of " + strings.Join(LinkPresets(), ", ") + "; none means no shaping"
}

// ParseLink parses a link specification: "10Gbit,25us", "1Gbit",
// "800Mbit,50us", "unlimited,5ms", a preset ("1g", "10g", "25g", "100g",
// "lan", "wan"), a preset with its latency replaced ("10g,1ms"), or "none".
// Case does not matter. Link.String gives the canonical form back.
func ParseLink(s string) (Link, error) {
	in := strings.ToLower(strings.TrimSpace(s))
	if in == "" || in == "none" {
		return Link{}, nil
	}
	rateText, latText, hasLat := strings.Cut(in, ",")
	rateText, latText = strings.TrimSpace(rateText), strings.TrimSpace(latText)
	var l Link
	if p, ok := linkPresets[rateText]; ok {
		l = p
	} else {
		r, err := parseRate(rateText)
		if err != nil {
			return Link{}, fmt.Errorf("link %q: %v (%s)", s, err, linkSyntax())
		}
		l.Rate = r
	}
	if hasLat {
		d, err := time.ParseDuration(latText)
		if err != nil || d < 0 {
			return Link{}, fmt.Errorf("link %q: bad latency %q (%s)", s, latText, linkSyntax())
		}
		l.Latency = d
	}
	return l, nil
}

func parseRate(s string) (int64, error) {
	if s == "unlimited" || s == "inf" {
		return 0, nil
	}
	for _, u := range rateUnits {
		num, ok := strings.CutSuffix(s, u.name)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || math.IsNaN(v) || v <= 0 || v*float64(u.scale) > math.MaxInt64/2 {
			return 0, fmt.Errorf("bad rate %q", s)
		}
		bits := int64(math.Round(v * float64(u.scale)))
		if bits < 1 {
			return 0, fmt.Errorf("rate %q is under 1 bit/s", s)
		}
		return bits, nil
	}
	return 0, fmt.Errorf("rate %q has no unit", s)
}

// String returns the canonical form, which ParseLink reads back: "10Gbit,25us",
// "800Mbit", "unlimited,5ms", or "none" for the zero Link.
func (l Link) String() string {
	if l == (Link{}) {
		return "none"
	}
	rate := "unlimited"
	if l.Rate > 0 {
		rate = strconv.FormatInt(l.Rate, 10) + "bit"
		for _, u := range []struct {
			name  string
			scale int64
		}{{"Tbit", 1e12}, {"Gbit", 1e9}, {"Mbit", 1e6}, {"kbit", 1e3}} {
			if l.Rate%u.scale == 0 {
				rate = strconv.FormatInt(l.Rate/u.scale, 10) + u.name
				break
			}
		}
	}
	if l.Latency == 0 {
		return rate
	}
	return rate + "," + strings.ReplaceAll(l.Latency.String(), "µs", "us")
}

// Validate checks that the link is one ParseLink could have produced.
func (l Link) Validate() error {
	if l.Rate < 0 || l.Latency < 0 {
		return fmt.Errorf("link with negative rate %d or latency %v", l.Rate, l.Latency)
	}
	return nil
}
