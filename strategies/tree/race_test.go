//go:build race

package tree

// raceEnabled is true under -race, where the suite's element-by-element
// checks of million-element results dominate the run time.
const raceEnabled = true
