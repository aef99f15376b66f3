package main

import (
	"slices"
	"strings"
	"testing"
)

// TestCompletion drives cobra's hidden __complete command, which the shell
// scripts of 'distbench completion' call, over every command with a
// completed flag.
func TestCompletion(t *testing.T) {
	strategies := []string{"nccl", "ps", "ring", "tree"}
	presets := []string{"100g", "10g", "1g", "25g", "lan", "wan", "none"}
	tests := []struct {
		args []string // after __complete
		want []string // exactly, in order
	}{
		{[]string{"run", "--strategy", ""}, strategies},
		{[]string{"run", "--strategy", "r"}, []string{"ring"}},
		{[]string{"run", "--collective", "allr"}, []string{"allreduce"}},
		{[]string{"run", "--dtype", "float"}, []string{"float32", "float64", "float16"}},
		{[]string{"run", "-d", "int"}, []string{"int32", "int64", "int8"}},
		{[]string{"run", "--op", ""}, []string{"sum", "prod", "max", "min", "avg", "mulsum", "all"}},
		{[]string{"run", "--link", ""}, presets},
		{[]string{"run", "--link", "1"}, []string{"100g", "10g", "1g"}},
		{[]string{"train", "--strategy", ""}, strategies},
		{[]string{"train", "--link", "w"}, []string{"wan"}},
		{[]string{"soak", "--strategy", ""}, strategies},
		{[]string{"soak", "--strategy", "ring,"}, []string{"ring,nccl", "ring,ps", "ring,tree"}},
		// A plan's lists are comma-separated, and also take "all".
		{[]string{"sweep", "--strategy", ""}, append(strategies, "all")},
		{[]string{"sweep", "--strategy", "ring,"}, []string{"ring,nccl", "ring,ps", "ring,tree"}},
		{[]string{"sweep", "--collective", "allreduce,b"}, []string{"allreduce,barrier", "allreduce,broadcast"}},
		{[]string{"sweep", "--op", "sum,m"}, []string{"sum,max", "sum,min", "sum,mulsum"}},
		{[]string{"sweep", "--link", "l"}, []string{"lan"}},
		{[]string{"ab", "a", "b", "--strategy", "t"}, []string{"tree"}},
		{[]string{"ab", "a", "b", "--dtype", "float32,float6"}, []string{"float32,float64"}},
		{[]string{"ab", "a", "b", "--link", "2"}, []string{"25g"}},
	}
	for _, tt := range tests {
		name := strings.Join(tt.args, " ")
		t.Run(name, func(t *testing.T) {
			code, stdout, _ := runCLI(t, append([]string{"__complete"}, tt.args...)...)
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			// The last line is cobra's directive: 4, no file names.
			if code != 0 || len(lines) == 0 || lines[len(lines)-1] != ":4" {
				t.Fatalf("exit %d, stdout %q", code, stdout)
			}
			if got := lines[:len(lines)-1]; !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
