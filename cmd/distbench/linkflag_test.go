package main

import (
	"strings"
	"testing"
)

func TestLinkValue(t *testing.T) {
	var spec string
	v := newLinkValue(&spec)
	for _, s := range []string{"rank3=1gbit", "10Gbit,25us"} {
		if err := v.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if spec != "10Gbit,25us;rank3=1Gbit" {
		t.Errorf("spec %q", spec)
	}
	if err := v.Set("1g"); err == nil || !strings.Contains(err.Error(), "two default links") {
		t.Errorf("a second default: %v", err)
	}
	if spec != "10Gbit,25us;rank3=1Gbit" {
		t.Errorf("a refused value changed the spec to %q", spec)
	}
	var one string
	if err := newLinkValue(&one).Set("10g"); err != nil || one != "10g" {
		t.Errorf("one value: %q, %v (want it as given)", one, err)
	}
}
