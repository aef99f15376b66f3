//go:build race

package ps_test

// raceDetector reports a -race build, whose instrumentation makes the
// conformance suite's element-by-element checks ten times slower.
const raceDetector = true
