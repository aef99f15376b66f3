package wire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A flood of refusals is at most two lines per interval, however many,
// each bounded; the count, the sources and the first reason are kept. The
// clock is virtual: only the order of events decides.
func TestRefusalLogIsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	var lines []string
	r := &RefusalLog{Prefix: "ps: server 0", Every: 10 * time.Second, Now: func() time.Time { return now },
		Logf: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }}
	bad := errors.New("authentication failed: " + strings.Repeat("x", 1000))

	for i := range 1000 {
		r.Refused(fmt.Sprintf("10.0.0.%d:%d", i%7, 40000+i), bad)
		now = now.Add(time.Millisecond) // a second for all of them
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "ps: server 0: refused a connection from 10.0.0.0:40000: authentication failed") {
		t.Fatalf("after 1000 refusals in 1s: %q, want the first alone", lines)
	}
	now = now.Add(10 * time.Second)
	r.Refused("10.0.0.9:1", bad)
	if len(lines) != 2 {
		t.Fatalf("%d lines after the interval, want 2: %q", len(lines), lines)
	}
	want := "ps: server 0: refused 1000 more connection(s) from 10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4, …; the first: authentication failed"
	if !strings.HasPrefix(lines[1], want) {
		t.Errorf("summary %q, want it to begin %q", lines[1], want)
	}
	r.Flush()
	r.Flush() // nothing more to say
	if len(lines) != 2 {
		t.Errorf("flush said %q with nothing pending", lines[2:])
	}
	for _, l := range lines {
		if len(l) > 500 {
			t.Errorf("a line of %d bytes", len(l))
		}
	}

	// Quiet for an interval: the next refusal is a line of its own again.
	now = now.Add(time.Minute)
	r.Refused("10.0.0.5:2", errors.New("job id mismatch"))
	if len(lines) != 3 || !strings.Contains(lines[2], "refused a connection from 10.0.0.5:2: job id mismatch") {
		t.Errorf("after a quiet minute: %q", lines[2:])
	}
	// What is pending at the end is said by Flush.
	r.Refused("10.0.0.6:3", errors.New("service mismatch"))
	r.Flush()
	if len(lines) != 4 || !strings.Contains(lines[3], "refused 1 more connection(s) from 10.0.0.6; the first: service mismatch") {
		t.Errorf("flush: %q", lines[3:])
	}
	var nilLog *RefusalLog
	nilLog.Refused("x", bad) // a nil log says nothing, and does not panic
	nilLog.Flush()
}
