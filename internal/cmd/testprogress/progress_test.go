package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestProgress feeds recorded go test -json lines, at made-up times, and
// checks what is printed: a line per finished package, a failed package's
// failed and unfinished tests' output (not its passing tests'), the
// heartbeat after a quiet minute, and the closing line.
func TestProgress(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		at   time.Duration
		line string // a go test -json line, or "tick"
	}
	tests := []struct {
		name  string
		of    int
		code  int
		steps []step
		want  string
	}{
		{
			name: "pass, no tests, heartbeat",
			of:   3,
			steps: []step{
				{0, "tick"},
				{61 * time.Second, "tick"},
				{70 * time.Second, `{"Action":"start","Package":"m/a"}`},
				{71 * time.Second, `{"Action":"run","Package":"m/a","Test":"TestX"}`},
				{71 * time.Second, `{"Action":"output","Package":"m/a","Test":"TestX","Output":"=== RUN   TestX\n"}`},
				{72 * time.Second, `{"Action":"pass","Package":"m/a","Test":"TestX","Elapsed":1}`},
				{150 * time.Second, "tick"},
				{151 * time.Second, `{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t80.5s\n"}`},
				{151 * time.Second, `{"Action":"pass","Package":"m/a","Elapsed":80.5}`},
				{152 * time.Second, `{"Action":"start","Package":"m/b"}`},
				{152 * time.Second, `{"Action":"output","Package":"m/b","Output":"?   \tm/b\t[no test files]\n"}`},
				{152 * time.Second, `{"Action":"skip","Package":"m/b","Elapsed":0}`},
				{153 * time.Second, `{"Action":"start","Package":"m/c"}`},
				{154 * time.Second, `{"Action":"pass","Package":"m/c","Elapsed":1.25}`},
			},
			want: "[0/3] 1m1s: building test binaries, or running packages whose output is not yet shown…\n" +
				"[0/3] 2m30s: running m/a (1m20s)\n" +
				"[1/3] ok   m/a (80.5s)\n" +
				"[3/3] ok   m/c (1.2s)\n" +
				"go test: ok in 2m34s: 2 packages passed, 0 failed, 1 without tests\n",
		},
		{
			name: "a failed test and an unfinished one",
			code: 1,
			steps: []step{
				{0, `{"Action":"start","Package":"m/a"}`},
				{1 * time.Second, `{"Action":"output","Package":"m/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}`},
				{1 * time.Second, `{"Action":"pass","Package":"m/a","Test":"TestOK"}`},
				{2 * time.Second, `{"Action":"output","Package":"m/a","Test":"TestBad","Output":"    a_test.go:9: got 1, want 2\n"}`},
				{2 * time.Second, `{"Action":"fail","Package":"m/a","Test":"TestBad"}`},
				{3 * time.Second, `{"Action":"output","Package":"m/a","Test":"TestHang","Output":"panic: test timed out after 25m0s\n"}`},
				{3 * time.Second, `{"Action":"output","Package":"m/a","Output":"FAIL\tm/a\t1500.0s\n"}`},
				{3 * time.Second, `{"Action":"fail","Package":"m/a","Elapsed":1500}`},
				{4 * time.Second, `{"ImportPath":"m/b [m/b.test]","Action":"build-output","Output":"b.go:3:1: syntax error\n"}`},
				{4 * time.Second, `not json: a line go printed itself`},
			},
			want: "    a_test.go:9: got 1, want 2\n" +
				"panic: test timed out after 25m0s\n" +
				"FAIL\tm/a\t1500.0s\n" +
				"[1] FAIL m/a (1500.0s)\n" +
				"b.go:3:1: syntax error\n" +
				"not json: a line go printed itself\n" +
				"go test: FAIL (exit 1) in 4s: 0 packages passed, 1 failed, 0 without tests\n" +
				"failed: m/a\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			p := newProgress(&out, t0, tt.of)
			var lines []string
			for _, s := range tt.steps {
				if s.line != "tick" {
					lines = append(lines, s.line)
				}
			}
			dec := newDecoder(strings.NewReader(strings.Join(lines, "\n") + "\n"))
			var end time.Time
			for _, s := range tt.steps {
				end = t0.Add(s.at)
				if s.line == "tick" {
					p.tick(end, time.Minute)
					continue
				}
				e, err := dec.next()
				if err == io.EOF {
					t.Fatal("decoder ended early")
				}
				if err != nil {
					p.text(err.Error())
				} else {
					p.event(e, end)
				}
			}
			if _, err := dec.next(); err != io.EOF {
				t.Fatalf("decoder: %v left over, want EOF", err)
			}
			p.finish(end, tt.code)
			if got := out.String(); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestRunExitStatus: the command's exit status is testprogress's, and its
// events are read from a real process's standard output.
func TestRunExitStatus(t *testing.T) {
	for _, code := range []int{0, 3} {
		var out, errw strings.Builder
		script := `echo '{"Action":"start","Package":"m/a"}'; echo '{"Action":"pass","Package":"m/a","Elapsed":0.5}'; exit ` + map[int]string{0: "0", 3: "3"}[code]
		if got := run([]string{"sh", "-c", script}, time.Hour, 1, &out, &errw); got != code {
			t.Errorf("exit %d: run returned %d (stdout %q, stderr %q)", code, got, out.String(), errw.String())
		}
		if !strings.Contains(out.String(), "[1/1] ok   m/a (0.5s)\n") {
			t.Errorf("exit %d: stdout %q lacks the package's line", code, out.String())
		}
	}
}
