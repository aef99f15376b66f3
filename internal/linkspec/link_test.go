package linkspec

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseLink(t *testing.T) {
	tests := []struct {
		in   string
		want Link
		str  string
	}{
		{"10Gbit,25us", Link{10e9, 25 * time.Microsecond}, "10Gbit,25us"},
		{"1Gbit", Link{1e9, 0}, "1Gbit"},
		{"800Mbit,50us", Link{800e6, 50 * time.Microsecond}, "800Mbit,50us"},
		{"800mbit, 50µs", Link{800e6, 50 * time.Microsecond}, "800Mbit,50us"},
		{"1.5Gbit,1.5ms", Link{1.5e9, 1500 * time.Microsecond}, "1500Mbit,1.5ms"},
		{"100Gbps", Link{100e9, 0}, "100Gbit"},
		{"2500kbit", Link{2.5e6, 0}, "2500kbit"},
		{"123bit", Link{123, 0}, "123bit"},
		{"2Tbit", Link{2e12, 0}, "2Tbit"},
		{"unlimited,5ms", Link{0, 5 * time.Millisecond}, "unlimited,5ms"},
		{"1g", Link{1e9, 50 * time.Microsecond}, "1Gbit,50us"},
		{"10g", Link{10e9, 20 * time.Microsecond}, "10Gbit,20us"},
		{"25G", Link{25e9, 10 * time.Microsecond}, "25Gbit,10us"},
		{"100g", Link{100e9, 5 * time.Microsecond}, "100Gbit,5us"},
		{"lan", Link{10e9, 50 * time.Microsecond}, "10Gbit,50us"},
		{" WAN ", Link{1e9, 10 * time.Millisecond}, "1Gbit,10ms"},
		{"10g,1ms", Link{10e9, time.Millisecond}, "10Gbit,1ms"},
		{"none", Link{}, "none"},
		{"", Link{}, "none"},
	}
	for _, tt := range tests {
		got, err := ParseLink(tt.in)
		if err != nil {
			t.Errorf("ParseLink(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseLink(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if s := got.String(); s != tt.str {
			t.Errorf("ParseLink(%q).String() = %q, want %q", tt.in, s, tt.str)
		}
		if back, err := ParseLink(got.String()); err != nil || back != got {
			t.Errorf("String %q does not parse back: %+v, %v", got.String(), back, err)
		}
	}
}

func TestParseLinkErrors(t *testing.T) {
	for _, in := range []string{"10", "fast", "10GB/s", "-1Gbit", "0bit", "0.1bit", "nanGbit", "infGbit", "1Gbit,soon", "1Gbit,-1ms", "1Gbit,5"} {
		_, err := ParseLink(in)
		if err == nil {
			t.Errorf("ParseLink(%q) accepted it", in)
			continue
		}
		for _, want := range []string{fmt.Sprintf("%q", in), "accepted:", "Gbit", "lan, wan"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ParseLink(%q): error %q does not mention %q", in, err, want)
			}
		}
	}
}

func ExampleParseLink() {
	l, _ := ParseLink("800mbit,50us")
	fmt.Println(l, l.Rate, l.Latency)
	l, _ = ParseLink("wan")
	fmt.Println(l)
	_, err := ParseLink("10GB/s")
	fmt.Println(err != nil)
	// Output:
	// 800Mbit,50us 800000000 50µs
	// 1Gbit,10ms
	// true
}
