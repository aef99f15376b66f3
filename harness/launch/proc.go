package launch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// proc is one started process.
type proc struct {
	name string
	rank int // -1 for a server
	env  []string
	cmd  *exec.Cmd

	mu       sync.Mutex
	lastLine string
	err      error
	done     bool
	killed   bool
	pipes    sync.WaitGroup
}

func (p *proc) start(exe string, args []string, lifeline *os.File, out *prefixWriter, onRecord func(string)) error {
	p.cmd = exec.Command(exe, args...)
	p.cmd.Env = p.env
	p.cmd.ExtraFiles = []*os.File{lifeline}
	dieWithLauncher(p.cmd)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := p.cmd.Start(); err != nil {
		return err
	}
	scan := func(r io.Reader, records bool) {
		defer p.pipes.Done()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 64<<20)
		for sc.Scan() {
			line := sc.Text()
			if records {
				if rec, ok := strings.CutPrefix(line, RecordPrefix); ok {
					onRecord(rec)
					continue
				}
			}
			p.mu.Lock()
			if strings.TrimSpace(line) != "" {
				p.lastLine = line
			}
			p.mu.Unlock()
			out.line(p.name, line)
		}
	}
	p.pipes.Add(2)
	go scan(stdout, p.rank == 0)
	go scan(stderr, false)
	return nil
}

func (p *proc) wait() {
	p.pipes.Wait() // read everything before Wait closes the pipes
	err := p.cmd.Wait()
	p.mu.Lock()
	p.err, p.done = err, true
	p.mu.Unlock()
}

// failedOnItsOwn reports a process that failed and was not killed by us.
func (p *proc) failedOnItsOwn() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err != nil && !p.killed
}

// diedBySignal reports whether the process was ended by a signal (not one
// the launcher sent it).
func (p *proc) diedBySignal() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) || p.killed {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

func (p *proc) exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// isStopped says whether p is running but stopped (SIGSTOP).
func (p *proc) isStopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.done && p.cmd != nil && p.cmd.Process != nil && stopped(p.cmd.Process.Pid)
}

func (p *proc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done && p.cmd != nil && p.cmd.Process != nil {
		p.killed = true
		p.cmd.Process.Kill()
	}
}

func (p *proc) describeFailure() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := fmt.Sprintf("%s (pid %d) %v", p.name, p.cmd.Process.Pid, p.err)
	if p.lastLine != "" {
		s += ": " + strings.TrimPrefix(p.lastLine, "distbench: ")
	}
	return s
}

// prefixWriter writes whole lines from several processes without interleaving them.
type prefixWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (pw *prefixWriter) line(who, s string) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	fmt.Fprintf(pw.w, "[%s] %s\n", who, s)
}
