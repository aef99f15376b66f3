// Package doctor is distbench's preflight: run under the same launcher and
// environment as a job (`mpirun ... distbench doctor`, torchrun, srun, a
// Kubernetes Job, or alone), it finds in a few seconds what makes
// distributed jobs hang or fail at start, one line per problem, each
// naming the fix.
//
// Each process checks what it can alone (the job's secret, the interface
// it would bind, /dev/shm, its open-file and process limits, the GPU
// libraries when asked); then, under a launcher, every rank reports to
// rank 0 at MASTER_ADDR:MASTER_PORT, the address the job's store will use,
// so that an address or port the ranks cannot reach shows here rather than
// as a rank waiting out its join timeout. Rank 0 compares the ranks: the
// same secret (by an HMAC over a nonce of its own, never the secret), the
// interfaces they would bind, their clocks.
package doctor

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/distbench/distbench/harness/launch"
	"github.com/distbench/distbench/internal/rendezvous"
)

// Options are what a check reads; the zero value of each hook means the
// real thing.
type Options struct {
	// Getenv reads the launcher's environment; nil means os.Getenv.
	Getenv func(string) string
	// Timeout bounds the wait for the other ranks; 0 means 10s.
	Timeout time.Duration
	// LocalRanks is how many ranks the job runs on this host, for the
	// limits and /dev/shm; 0 means the launcher's LOCAL_WORLD_SIZE, else 1.
	LocalRanks int
	// Statfs says how many bytes are free on the filesystem at path.
	Statfs func(path string) (free uint64, err error)
	// Limits are this process's open-file and process limits (soft).
	Limits func() (nofile, nproc uint64, err error)
	// LookPath finds a tool; nil means exec.LookPath's rules via PATH.
	LookPath func(string) (string, error)
	// GPU, if set, is asked for the GPU libraries' problems (a line each):
	// harness/gpucheck's Check, when the job uses GPUs.
	GPU func() []string
}

// Report is what a process found.
type Report struct {
	Rank, Size int
	// Problems, one line each, "rank N: " first where another rank's.
	Problems []string
	// Notes are not problems: what was checked, the tools found.
	Notes []string
}

// ShmNeed is the /dev/shm a host needs for n ranks over the shm transport:
// a segment of two rings of 1 MiB per pair, with room to spare.
func ShmNeed(n int) uint64 { return uint64(max(n*(n-1)/2, 1))*2<<20 + 64<<20 }

// FileNeed is the open files a rank of a job of size ranks needs: a
// connection to each other rank, the store's, and a margin for the runtime.
func FileNeed(size int) uint64 { return uint64(size + 64) }

// the report a rank sends rank 0.
type rankReport struct {
	Rank       int      `json:"rank"`
	Host       string   `json:"host"`
	ListenHost string   `json:"listen_host"`
	SecretMAC  string   `json:"secret_mac"` // HMAC(secret, nonce); "" without a secret
	UnixNano   int64    `json:"unix_nano"`
	Problems   []string `json:"problems"`
}

func (o *Options) defaults() {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Statfs == nil {
		o.Statfs = statfs
	}
	if o.Limits == nil {
		o.Limits = limits
	}
}

// Run checks this process, and under a launcher the job's ranks together.
func Run(ctx context.Context, o Options) *Report {
	o.defaults()
	r := &Report{Size: 1}
	info, err := rendezvous.FromEnv(o.Getenv)
	var ee *rendezvous.EnvError
	underLauncher := true
	switch {
	case errors.As(err, &ee) && ee.Var == "":
		underLauncher = false // alone: the local launcher's checks
	case err != nil:
		r.Problems = append(r.Problems, err.Error())
		return r
	default:
		r.Rank, r.Size = info.Rank, info.Size
	}
	local := o.LocalRanks
	if local <= 0 {
		local, _ = strconv.Atoi(strings.TrimSpace(o.Getenv("LOCAL_WORLD_SIZE")))
		local = max(local, 1)
	}
	var secret []byte
	if underLauncher {
		if secret, err = launch.Token(o.Getenv); err != nil {
			r.Problems = append(r.Problems, err.Error())
		}
	}
	r.Problems = append(r.Problems, o.localChecks(local, max(r.Size, local))...)
	listenHost := launch.ListenHost(o.Getenv)
	if l, err := net.Listen("tcp", net.JoinHostPort(listenHost, "0")); err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("cannot listen on %s, the interface this rank would bind: %v (set DISTBENCH_LISTEN_HOST to an address of this host)", listenHost, err))
	} else {
		l.Close()
	}
	r.Notes = append(r.Notes, o.tools())
	if !underLauncher || r.Size == 1 {
		return r
	}
	if err := info.ResolveMaster(o.Getenv); err != nil {
		r.Problems = append(r.Problems, err.Error())
		return r
	}
	port := info.MasterPort
	if info.AgentStore {
		// torchrun's agent holds MASTER_PORT with its own store: check it
		// answers, and meet on the next port.
		c, err := net.DialTimeout("tcp", net.JoinHostPort(info.MasterAddr, strconv.Itoa(port)), o.Timeout)
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("torchrun's store at %s:%d does not answer: %v", info.MasterAddr, port, err))
			return r
		}
		c.Close()
		port++
	}
	addr := net.JoinHostPort(info.MasterAddr, strconv.Itoa(port))
	host, _ := os.Hostname()
	me := rankReport{Rank: r.Rank, Host: host, ListenHost: listenHost, Problems: slices.Clone(r.Problems)}
	if r.Rank == 0 {
		r.Problems = append(r.Problems, o.gather(ctx, addr, info.MasterAddr, me, secret, r.Size)...)
		return r
	}
	if p := o.report(ctx, addr, info.MasterAddr, me, secret); p != "" {
		r.Problems = append(r.Problems, p)
	} else {
		r.Problems = nil // rank 0 says them, with every rank's
	}
	return r
}

// localChecks are what this process can check alone.
func (o *Options) localChecks(local, size int) []string {
	var probs []string
	if runtime.GOOS == "linux" {
		if free, err := o.Statfs("/dev/shm"); err == nil {
			if need := ShmNeed(local); free < need {
				probs = append(probs, fmt.Sprintf("/dev/shm has %s free, less than the %s that %d ranks on this host need over --transport shm "+
					"(make it larger: docker run --shm-size=1g, a Kubernetes emptyDir with medium: Memory; or use --transport tcp)",
					mib(free), mib(need), local))
			}
		}
	}
	if nofile, nproc, err := o.Limits(); err == nil {
		if need := FileNeed(size); nofile < need {
			probs = append(probs, fmt.Sprintf("open-file limit %d is below the %d a rank of %d needs (raise it: ulimit -n 65536, or LimitNOFILE in the unit)", nofile, need, size))
		}
		if need := uint64(local + 16); nproc < need {
			probs = append(probs, fmt.Sprintf("process limit %d is below the %d that %d ranks on this host need (raise it: ulimit -u)", nproc, need, local))
		}
	}
	if o.GPU != nil {
		probs = append(probs, o.GPU()...)
	}
	return probs
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// tools notes which peers' tools are on PATH (none is needed).
func (o *Options) tools() string {
	look := o.LookPath
	if look == nil {
		look = lookPath
	}
	var have, lack []string
	for _, t := range []string{"mpirun", "srun", "torchrun", "all_reduce_perf", "osu_allreduce"} {
		if _, err := look(t); err == nil {
			have = append(have, t)
		} else {
			lack = append(lack, t)
		}
	}
	return fmt.Sprintf("tools on PATH: %s; not: %s", orNone(have), orNone(lack))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func mac(secret, nonce []byte) string {
	if len(secret) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("distbench doctor v1"))
	m.Write(nonce)
	return hex.EncodeToString(m.Sum(nil))
}

// masterProblem says why MASTER_ADDR could not be listened on by rank 0.
func masterProblem(addr, master string, err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("MASTER_ADDR=%s does not resolve (%v): set it to rank 0's host name or address", master, dnsErr.Err)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Sprintf("MASTER_ADDR=%s is not an address of this host, rank 0's: rank 0 hosts the job's store there, so MASTER_ADDR must name the host rank 0 runs on", master)
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Sprintf("%s is in use on rank 0's host (another job, or a store left running): pick another MASTER_PORT", addr)
	}
	return fmt.Sprintf("rank 0 cannot listen at %s: %v", addr, err)
}

// gather is rank 0's side: listen where the store will, hear every rank,
// compare them.
func (o *Options) gather(ctx context.Context, addr, master string, me rankReport, secret []byte, size int) []string {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return []string{masterProblem(addr, master, err)}
	}
	defer ln.Close()
	nonce := make([]byte, 32)
	rand.Read(nonce)
	me.SecretMAC = mac(secret, nonce)
	reports := map[int]rankReport{0: me}
	recvAt := map[int]time.Time{}
	var probs []string
	deadline := time.Now().Add(o.Timeout)
	type heard struct {
		rep  rankReport
		conn net.Conn
		at   time.Time
	}
	got := make(chan heard)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				// A connection that says nothing holds only itself.
				c.SetDeadline(deadline)
				fmt.Fprintf(c, "%x\n", nonce)
				line, err := bufio.NewReaderSize(io.LimitReader(c, 64<<10), 64<<10).ReadBytes('\n')
				var rep rankReport
				if err != nil || json.Unmarshal(line, &rep) != nil || rep.Rank <= 0 || rep.Rank >= size {
					c.Close()
					return
				}
				select {
				case got <- heard{rep, c, time.Now()}:
				case <-ctx.Done():
					c.Close()
				}
			}()
		}
	}()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	tm := time.NewTimer(time.Until(deadline))
	defer tm.Stop()
wait:
	for len(reports) < size {
		select {
		case h := <-got:
			if _, dup := reports[h.rep.Rank]; dup {
				probs = append(probs, fmt.Sprintf("rank %d reported twice (from %s too): two processes claim it", h.rep.Rank, h.conn.RemoteAddr()))
				h.conn.Close()
				continue
			}
			reports[h.rep.Rank], recvAt[h.rep.Rank] = h.rep, h.at
			conns = append(conns, h.conn)
		case <-tm.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	for r := range size {
		rep, ok := reports[r]
		if !ok {
			continue
		}
		for _, p := range rep.Problems {
			if r == 0 {
				probs = append(probs, p)
			} else {
				probs = append(probs, fmt.Sprintf("rank %d: %s", r, p))
			}
		}
	}
	var missing []string
	hosts := map[string]bool{}
	loopback := -1
	for r := range size {
		rep, ok := reports[r]
		if !ok {
			missing = append(missing, strconv.Itoa(r))
			continue
		}
		hosts[rep.Host] = true
		if ip := net.ParseIP(rep.ListenHost); ip != nil && ip.IsLoopback() && loopback < 0 {
			loopback = r
		}
		if r == 0 {
			continue
		}
		switch {
		case me.SecretMAC == "" || rep.SecretMAC == "":
			// said already, by whichever rank lacks one
		case !hmac.Equal([]byte(rep.SecretMAC), []byte(me.SecretMAC)):
			probs = append(probs, fmt.Sprintf("rank %d's DISTBENCH_TOKEN differs from rank 0's (compared by an HMAC; neither is shown): export one secret to every rank", r))
		}
		if skew := time.Duration(rep.UnixNano - recvAt[r].UnixNano()); skew > time.Second || skew < -o.Timeout-time.Second {
			probs = append(probs, fmt.Sprintf("rank %d's clock is %v off rank 0's: timestamps in results will disagree (run an NTP client)", r, skew.Round(time.Millisecond)))
		}
	}
	if len(missing) > 0 {
		probs = append(probs, fmt.Sprintf("rank %s never reached rank 0 at %s within %v: a wrong MASTER_ADDR or MASTER_PORT on its side, a firewall, or it did not start",
			strings.Join(missing, ", "), addr, o.Timeout))
	}
	if len(hosts) > 1 && loopback >= 0 {
		probs = append(probs, fmt.Sprintf("rank %d would listen on loopback (%s) while the ranks are on %d hosts: set DISTBENCH_LISTEN_HOST, or MASTER_ADDR to rank 0's address on the job's network",
			loopback, reports[loopback].ListenHost, len(hosts)))
	}
	verdict := "ok\n"
	if len(probs) > 0 {
		verdict = fmt.Sprintf("problems %d\n", len(probs))
	}
	for _, c := range conns {
		c.Write([]byte(verdict))
	}
	return probs
}

// report is every other rank's side: reach rank 0, retrying until the
// timeout as a rank that starts first does, and send what it found.
func (o *Options) report(ctx context.Context, addr, master string, me rankReport, secret []byte) string {
	if _, err := net.DefaultResolver.LookupHost(ctx, master); err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			err = errors.New(dnsErr.Err)
		}
		return fmt.Sprintf("MASTER_ADDR=%s does not resolve here (%v): set it to rank 0's host name or address", master, err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var d net.Dialer
	var last error
	backoff := 20 * time.Millisecond
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			p, err := exchange(ctx, c, me, secret)
			c.Close()
			if err == nil {
				return p
			}
			last = err
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			why := "nobody listens there"
			if !errors.Is(last, syscall.ECONNREFUSED) {
				why = "no answer"
			}
			return fmt.Sprintf("cannot reach rank 0 at %s within %v (%s; last: %v): is rank 0 running, on the host MASTER_ADDR names, with the same MASTER_PORT?", addr, o.Timeout, why, last)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func exchange(ctx context.Context, c net.Conn, me rankReport, secret []byte) (string, error) {
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	br := bufio.NewReader(io.LimitReader(c, 4096))
	line, err := br.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("no nonce from rank 0: %w", err)
	}
	nonce, err := hex.DecodeString(strings.TrimSpace(line))
	if err != nil || len(nonce) != 32 {
		return "", errors.New("not distbench doctor's rank 0 (another program at that port?)")
	}
	me.SecretMAC = mac(secret, nonce)
	me.UnixNano = time.Now().UnixNano()
	b, _ := json.Marshal(me)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return "", err
	}
	// Rank 0 answers once it has heard every rank, or its timeout.
	c.SetDeadline(time.Time{})
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d.Add(5 * time.Second))
	}
	verdict, err := br.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("no verdict from rank 0: %w", err)
	}
	if strings.HasPrefix(verdict, "ok") {
		return "", nil
	}
	return "rank 0 found " + strings.TrimSpace(strings.TrimPrefix(verdict, "problems ")) + " problem(s); it lists them", nil
}
