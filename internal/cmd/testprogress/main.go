// Command testprogress runs `go test -json …` and prints what it is doing
// while it runs: a line per package as it finishes, the output of those
// that fail, and, whenever a minute passes without a line, which packages
// are running and for how long (or that test binaries are still being
// built). `make test` runs through it, since a plain `go test ./...` under
// -race on a busy 2-core machine is silent for its first eight minutes.
//
//	go run ./internal/cmd/testprogress [-every 1m] [-of N] -- go test -json -race ./...
//
// It exits with the command's exit status.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

func main() {
	every := flag.Duration("every", time.Minute, "print what is running after this long without a line")
	of := flag.Int("of", 0, "how many packages the command tests, for the [done/of] count (0: unknown)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: testprogress [-every D] [-of N] -- go test -json [flags] [packages]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *every <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(flag.Args(), *every, *of, os.Stdout, os.Stderr))
}

// run starts the command, feeds its standard output to a progress and
// returns the command's exit status.
func run(args []string, every time.Duration, of int, stdout, stderr io.Writer) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testprogress: %v\n", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testprogress: %v\n", err)
		return 2
	}
	var mu sync.Mutex
	p := newProgress(stdout, time.Now(), of)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				mu.Lock()
				p.tick(now, every)
				mu.Unlock()
			}
		}
	}()
	dec := newDecoder(out)
	for {
		e, err := dec.next()
		if err == io.EOF {
			break
		}
		mu.Lock()
		if err != nil {
			p.text(err.Error())
		} else {
			p.event(e, time.Now())
		}
		mu.Unlock()
	}
	close(done)
	err = cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		fmt.Fprintf(stderr, "testprogress: %v\n", err)
		code = 2
	}
	p.finish(time.Now(), code)
	return code
}
