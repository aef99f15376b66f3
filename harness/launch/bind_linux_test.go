//go:build linux

package launch

import (
	"strconv"
	"strings"
	"testing"
)

// Binding every thread to the CPUs the process already has leaves it
// runnable everywhere it was, and exercises the path the workers take; a
// malformed list is refused, naming the variable.
func TestBindToCPUs(t *testing.T) {
	cpus := allowedCPUs()
	if len(cpus) == 0 {
		t.Skip("affinity mask unavailable")
	}
	var list []string
	for _, c := range cpus {
		list = append(list, strconv.Itoa(c))
	}
	if err := bindToCPUs(strings.Join(list, ",")); err != nil {
		t.Fatal(err)
	}
	if got := allowedCPUs(); len(got) != len(cpus) {
		t.Errorf("after binding to %v the process may run on %v", cpus, got)
	}
	if err := bindToCPUs("0,x"); err == nil || !strings.Contains(err.Error(), EnvCPUs) {
		t.Errorf("bindToCPUs(\"0,x\") = %v, want an error naming %s", err, EnvCPUs)
	}
}
