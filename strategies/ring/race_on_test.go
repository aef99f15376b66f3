//go:build race

package ring_test

// raceEnabled is true under -race, which makes the conformance suite
// several times slower: the hierarchical layouts then run two of their
// suites, not all.
const raceEnabled = true
