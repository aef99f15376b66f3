package job

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/internal/units"
	"github.com/distbench/distbench/workloads/train"
)

// Spec is one launch: a world of NP ranks of Strategy measuring Points.
type Spec struct {
	Strategy string            `json:"strategy"`
	NP       int               `json:"np"`
	Options  map[string]string `json:"options,omitempty"`
	Link     string            `json:"link,omitempty"` // network shaping, see linkspec.ParseRankLinks
	// Transport is what carries the payloads of ranks on one host:
	// "auto" or "shm" (shared memory; see transport.TCPOptions.Transport),
	// or "" for TCP, which every spec before shared memory used.
	Transport string        `json:"transport,omitempty"`
	Timeout   time.Duration `json:"timeout"` // per operation
	Iters     int           `json:"iters"`
	Warmup    int           `json:"warmup"`
	Check     bool          `json:"check"`
	// CheckRuns is how many checked runs a point gets when Check is set
	// (nccl-tests' -c N); 0 means 1.
	CheckRuns int     `json:"check_runs,omitempty"`
	Points    []Point `json:"points"`
	// Train, if set, makes the launch a training run instead of Points.
	Train *train.Config `json:"train,omitempty"`
	// Soak, if set, makes the launch a soak (see [Soak]) instead of Points.
	Soak *SoakConfig `json:"soak,omitempty"`
	// KeepSamples keeps per-iteration samples in the records (for compare).
	KeepSamples bool `json:"keep_samples"`
	// TimeBudget, when positive, caps the timed iterations of each point:
	// after the first few, the ranks agree on how many more fit in the
	// budget, so a sweep's largest sizes do not dominate its running time.
	// A point always runs at least MinBudgetIters iterations (or Iters, if
	// fewer). Warm-up and the check run are not counted.
	TimeBudget time.Duration `json:"time_budget,omitempty"`
	// Device is where the points' buffers live: "" or "cpu" for host
	// memory, "cuda" for GPU memory (collective.ParseDevice).
	Device string `json:"device,omitempty"`
	// Hosts lays a local launch's ranks out on simulated hosts (HostsOf:
	// "2x2", "3,1"), each with its own host identity, so that a
	// hierarchical algorithm can be tried over loopback; "" for one host.
	Hosts string `json:"hosts,omitempty"`
	// Cycles is how many times the job measures its points, over one mesh
	// and one set of processes, as nccl-tests' -N runs its sizes again in
	// one job: 0 or 1 once, -1 until interrupted (a health loop exercises
	// one long-lived mesh, not a fresh one each time). With more than one,
	// each record carries its cycle as Round (from 1) and Cycles as Rounds
	// (0 when unbounded).
	Cycles int `json:"cycles,omitempty"`
}

// LinkFor is the shaping of rank's NIC (a worker's rank; a server is
// shaped by the default, which LinkFor(-1) gives), nil for none.
func (s *Spec) LinkFor(rank int) (*linkspec.Link, error) {
	if s.Link == "" {
		return nil, nil
	}
	rl, err := linkspec.ParseRankLinks(s.Link)
	if err != nil {
		return nil, err
	}
	l := rl.For(rank)
	if l == (linkspec.Link{}) {
		return nil, nil
	}
	return &l, nil
}

// TransportName is s's transport as results and reports name it: "tcp",
// "auto" or "shm".
func (s *Spec) TransportName() string {
	if s.Transport == "" {
		return linkspec.TransportTCP
	}
	return s.Transport
}

// CanonicalTransport is how a Spec holds the transport a user named: ""
// for tcp, so that TCP points keep the ids they had before there was a
// choice, and the name itself otherwise.
func CanonicalTransport(name string) string {
	if name == linkspec.TransportTCP {
		return ""
	}
	return name
}

// Point is one measured configuration.
type Point struct {
	Collective string `json:"collective"`
	Bytes      int64  `json:"bytes"`
	DType      string `json:"dtype"`
	Op         string `json:"op"`
	Root       int    `json:"root"`
	InPlace    bool   `json:"inplace"`
	// Point-to-point benchmarks only (Traits.PointToPoint): the window of
	// non-blocking operations of p2p-bw and p2p-bibw (0: DefaultWindow),
	// and, when Iters is positive, the point's own timed and warm-up
	// iterations instead of the Spec's, as OSU's differ for large messages.
	Window int `json:"window,omitempty"`
	Iters  int `json:"iters,omitempty"`
	Warmup int `json:"warmup,omitempty"`
}

// PointID is p's stable identifier within a launch.
func (s *Spec) PointID(p Point) string {
	id := fmt.Sprintf("%s/%s/np=%d/bytes=%d/%s/%s/root=%d/inplace=%v", p.Collective, s.Strategy, s.NP, p.Bytes, p.DType, p.Op, p.Root, p.InPlace)
	if p.Window > 0 {
		id += fmt.Sprintf("/window=%d", p.Window)
	}
	if s.Link != "" {
		id += "/link=" + s.Link
	}
	if s.Transport != "" {
		// Never the id of the same point over TCP: compare must not match them.
		id += "/mesh=" + s.Transport
	}
	if s.OnDevice() {
		id += "/device=" + s.Device
	}
	if s.Hosts != "" {
		id += "/hosts=" + s.Hosts
	}
	for _, k := range slices.Sorted(maps.Keys(s.Options)) {
		id += "/" + k + "=" + s.Options[k]
	}
	return id
}

// MaxProcesses is the most processes a launch starts on one machine:
// workers and a strategy's dedicated servers together.
const MaxProcesses = 512

// MinTimeout is the shortest operation deadline a spec accepts. A deadline
// is how long a peer may be silent before it is called dead; below a second
// a peer the OS has merely not scheduled yet (a busy machine, a process
// still starting) would be blamed as stuck, and the job fail falsely.
const MinTimeout = time.Second

// Validate checks the spec before any process starts; errors name the bad
// value and what is accepted.
func (s *Spec) Validate() error {
	st, err := collective.Lookup(s.Strategy)
	if err != nil {
		return err
	}
	if v, ok := st.(collective.OptionValidator); ok {
		if err := v.ValidateOptions(s.Options); err != nil {
			return fmt.Errorf("strategy %s: %w", s.Strategy, err)
		}
	}
	if a, ok := st.(collective.Availability); ok {
		if err := a.Available(); err != nil {
			return fmt.Errorf("strategy %s cannot run here: %w", s.Strategy, err)
		}
	}
	if s.NP < 1 {
		return fmt.Errorf("np %d: must be at least 1", s.NP)
	}
	if s.NP > MaxProcesses {
		return fmt.Errorf("np %d: at most %d local processes", s.NP, MaxProcesses)
	}
	if sv, ok := st.(driver.Servers); ok {
		servers, err := sv.ServerProcesses(s.Options, s.NP)
		if err != nil {
			return fmt.Errorf("strategy %s: %w", s.Strategy, err)
		}
		if s.NP+servers > MaxProcesses {
			return fmt.Errorf("np %d and %d dedicated servers: %d processes, but at most %d local processes (accepted: np plus servers up to %d)",
				s.NP, servers, s.NP+servers, MaxProcesses, MaxProcesses)
		}
	}
	if s.Hosts != "" {
		hosts, err := HostsOf(s.Hosts, s.NP)
		if err != nil {
			return err
		}
		// Shared memory joins ranks of one host only: refused here, before
		// any worker starts, not by every pair of ranks once they have.
		if s.Transport == linkspec.TransportShm && len(hosts) > 1 {
			return fmt.Errorf("transport shm with hosts %q: shared memory joins ranks of one host, and %q lays out %d (accepted: transport auto, which carries cross-host pairs over TCP, or one host)",
				s.Hosts, s.Hosts, len(hosts))
		}
	}
	if s.Cycles < -1 {
		return fmt.Errorf("cycles %d: must be -1 (until interrupted), 0 or more", s.Cycles)
	}
	if s.Iters < 1 {
		return fmt.Errorf("iters %d: must be at least 1", s.Iters)
	}
	if s.Warmup < 0 {
		return fmt.Errorf("warmup %d: must be 0 or more", s.Warmup)
	}
	if s.TimeBudget < 0 {
		return fmt.Errorf("time budget %v: must be 0 (none) or positive", s.TimeBudget)
	}
	if s.Timeout < MinTimeout {
		return fmt.Errorf("timeout %v: too short (accepted: %v or more)", s.Timeout, MinTimeout)
	}
	if s.Transport != "" {
		if err := linkspec.CheckTransport(s.Transport); err != nil {
			return err
		}
	}
	if err := s.validateDevice(); err != nil {
		return err
	}
	if s.Link != "" {
		rl, err := linkspec.ParseRankLinks(s.Link)
		if err != nil {
			return err
		}
		if m := rl.MaxRank(); m >= s.NP {
			return fmt.Errorf("link %q shapes rank %d, but np %d has ranks 0..%d", s.Link, m, s.NP, s.NP-1)
		}
	}
	for _, p := range s.Points {
		if err := p.validate(s.NP); err != nil {
			return err
		}
	}
	if s.Train != nil {
		if err := s.Train.Validate(s.NP); err != nil {
			return err
		}
	}
	if s.Soak != nil {
		if err := s.Soak.Validate(); err != nil {
			return err
		}
	}
	return nil
}

func (p Point) validate(np int) error {
	t, ok := collectives[p.Collective]
	if !ok {
		return fmt.Errorf("unknown collective %q (accepted: %s)", p.Collective, strings.Join(Collectives(), ", "))
	}
	dt, err := collective.ParseDType(p.DType)
	if err != nil {
		return err
	}
	if t.Reduces {
		if _, err := collective.ParseOp(p.Op); err != nil {
			return err
		}
	}
	if p.Bytes < 0 || p.Bytes > units.MaxBytes {
		return fmt.Errorf("size %d bytes: out of range (accepted: 0 to %d, 1PiB)", p.Bytes, int64(units.MaxBytes))
	}
	if p.Bytes%int64(dt.Size()) != 0 {
		return fmt.Errorf("size %d bytes is not a multiple of %s's %d bytes", p.Bytes, dt, dt.Size())
	}
	if p.Root < 0 || p.Root >= np {
		return fmt.Errorf("root %d out of range for np %d (accepted: 0..%d)", p.Root, np, np-1)
	}
	return p.validateP2P(t, np)
}

// BufferBytes is what one rank of a world of np allocates for p (the
// harness's benchmark alloc): the whole buffer, another for the
// out-of-place form (one rank's block of it for the collectives that split
// it), and always two for sendrecv and the p2p benchmarks. A strategy's own scratch comes on top.
func (p Point) BufferBytes(np int) int64 {
	dt, err := collective.ParseDType(p.DType)
	if err != nil {
		return 0
	}
	whole := int64(p.Count(dt, np)) * int64(dt.Size())
	switch {
	case p.Collective == "sendrecv" || collectives[p.Collective].PointToPoint:
		return 2 * whole // a send and a receive buffer (p2p: windows share them, as OSU's)
	case p.InPlace:
		return whole
	case collectives[p.Collective].Blocks && p.Collective != "alltoall":
		return whole + whole/int64(np)
	}
	return 2 * whole
}

// CheckMemory refuses a spec whose points' buffers, on localRanks ranks on
// this machine, do not fit in the memory it has available (availableMemory;
// where that is unknown, the check passes). It counts only the buffers the
// harness allocates, so what it refuses cannot run, and what it passes may
// still be short of the strategy's scratch.
func (s *Spec) CheckMemory(localRanks int) error {
	avail, source, ok := AvailableMemory()
	if !ok || localRanks < 1 {
		return nil
	}
	e := &MemoryError{Ranks: localRanks, Available: avail, Source: source}
	for _, p := range s.Points {
		per := p.BufferBytes(s.NP)
		if per*int64(localRanks) <= avail {
			continue
		}
		e.Over++
		if per > e.PerRank {
			e.Point, e.PerRank = p, per
		}
	}
	if e.Over == 0 {
		return nil
	}
	return e
}
