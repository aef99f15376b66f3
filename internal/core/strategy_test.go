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

// TestParseAlgoOptions: the ring's and the tree's one option parser.
func TestParseAlgoOptions(t *testing.T) {
	algos := []string{"auto", "rsag", "whole", "hier"}
	const hier = 3
	for _, tc := range []struct {
		name    string
		opts    map[string]string
		want    core.AlgoOptions
		wantErr string
	}{
		{"none: the defaults", nil, core.AlgoOptions{Chunk: 99}, ""},
		{"algo", map[string]string{"algo": "whole"}, core.AlgoOptions{Algo: 2, Chunk: 99}, ""},
		{"hier with inter", map[string]string{"algo": "hier", "inter": "rsag"}, core.AlgoOptions{Algo: 3, Inter: 1, Chunk: 99}, ""},
		{"chunk", map[string]string{"chunk": "256KiB"}, core.AlgoOptions{Chunk: 256 << 10}, ""},
		{"unknown algo", map[string]string{"algo": "bogus"}, core.AlgoOptions{}, `option algo="bogus" unknown (accepted: auto, rsag, whole, hier)`},
		{"inter is not hier", map[string]string{"algo": "hier", "inter": "hier"}, core.AlgoOptions{}, `option inter="hier" unknown (accepted: auto, rsag, whole)`},
		{"inter without hier", map[string]string{"inter": "rsag"}, core.AlgoOptions{}, "option inter=rsag applies only to algo=hier"},
		{"chunk too small", map[string]string{"chunk": "8"}, core.AlgoOptions{}, "option chunk=8 out of range"},
		{"unknown key", map[string]string{"lag": "1"}, core.AlgoOptions{}, `unknown option "lag" (accepted: algo, chunk, inter)`},
	} {
		got, err := core.ParseAlgoOptions(tc.opts, algos, hier, 99)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}
