// Package golden compares a test's output with a file under testdata: the
// one way distbench's golden tests (strategies' schedules, expanded plans,
// reports, the user-facing API) check what they print. Each test declares
// its own -update flag and passes it in, so that `go test -run X -update`
// rewrites only that test's files.
package golden

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Check compares got with the file at path or, when update is set, writes
// got to the file. A difference fails t, naming the file and listing the
// lines that differ.
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("output differs from %s (run the test with -update to accept it):\n%s", path, Diff(string(want), string(got)))
	}
}

// Diff lists the lines between the common head and tail of want and got:
// want's as "-", got's as "+", after the number of the first line that
// differs. One inserted or changed line shows as itself, not as every line
// after it shifted.
func Diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	head := 0
	for head < len(w) && head < len(g) && w[head] == g[head] {
		head++
	}
	tail := 0
	for tail < len(w)-head && tail < len(g)-head && w[len(w)-1-tail] == g[len(g)-1-tail] {
		tail++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "from line %d:\n", head+1)
	for _, l := range w[head : len(w)-tail] {
		b.WriteString("- " + l + "\n")
	}
	for _, l := range g[head : len(g)-tail] {
		b.WriteString("+ " + l + "\n")
	}
	return b.String()
}
