package core_test

import (
	"strings"
	"testing"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/core"
)

func TestParseChunk(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
		err   string // a substring of the error; "" for none
	}{
		{"64", 64, ""},
		{"64B", 64, ""},
		{"256KiB", 256 << 10, ""},
		{"1GiB", 1 << 30, ""},
		{"63", 0, "option chunk=63 out of range (accepted: 64B to 1GiB)"},
		{"2G", 0, "option chunk=2G out of range (accepted: 64B to 1GiB)"},
		{"lots", 0, "option chunk: malformed size"},
	} {
		got, err := core.ParseChunk(tc.value)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseChunk(%q) = %d, %v; want %d", tc.value, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseChunk(%q) = %d, %v; want an error containing %q", tc.value, got, err, tc.err)
		}
	}
}

func TestStrategy(t *testing.T) {
	var built []string
	s := core.Strategy[string]{
		Name:    "test",
		Summary: "a test strategy",
		Options: func(opts map[string]string) (string, error) {
			_, err := core.ParseChunk(opts["chunk"])
			return opts["chunk"], err
		},
		Algorithms: func(o string) core.Algorithms {
			built = append(built, o)
			return core.Simple{}
		},
	}
	if got := s.Description(); got != "a test strategy" {
		t.Errorf("Description() = %q", got)
	}
	if err := s.ValidateOptions(map[string]string{"chunk": "8"}); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("ValidateOptions(chunk=8) = %v, want out of range", err)
	}
	if _, err := s.New(t.Context(), collective.Config{Rank: 0, Size: 1, Options: map[string]string{"chunk": "lots"}}); err == nil {
		t.Error("New with chunk=lots succeeded")
	}
	c, err := s.New(t.Context(), collective.Config{Rank: 0, Size: 1, Options: map[string]string{"chunk": "4KiB"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(built) != 1 || built[0] != "4KiB" {
		t.Errorf("Algorithms called with %q, want [4KiB]", built)
	}
}
