//go:build !race

package ps_test

// raceDetector reports a -race build; see race_on_test.go.
const raceDetector = false
