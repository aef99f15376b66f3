package collective

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// Strategy builds communicators. Strategies register one under a name from init.
type Strategy interface {
	New(ctx context.Context, cfg Config) (Comm, error)
}

// StrategyFunc adapts a function to Strategy.
type StrategyFunc func(ctx context.Context, cfg Config) (Comm, error)

// New calls f.
func (f StrategyFunc) New(ctx context.Context, cfg Config) (Comm, error) { return f(ctx, cfg) }

// Describer is an optional interface: a one-line description for `distbench strategies`.
type Describer interface {
	Description() string
}

// OptionValidator is an optional interface: a strategy that takes Options
// checks them before any process starts, so that bad input fails early.
type OptionValidator interface {
	ValidateOptions(opts map[string]string) error
}

// Availability is an optional interface for strategies that need something
// this machine may lack (a GPU, a library); nil means it can run here.
type Availability interface {
	Available() error
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Strategy{}
)

// Register makes a strategy available under name. It panics on an empty
// name, a nil strategy or a name registered twice, as database/sql does.
func Register(name string, s Strategy) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" || s == nil {
		panic("collective: Register with empty name or nil strategy")
	}
	if _, dup := registry[name]; dup {
		panic("collective: Register called twice for strategy " + name)
	}
	registry[name] = s
}

// Strategies returns the registered names, sorted.
func Strategies() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the strategy registered under name; an unknown name is an
// error listing the names that exist.
func Lookup(name string) (Strategy, error) {
	registryMu.RLock()
	s, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown strategy %q (registered: %s)", name, strings.Join(Strategies(), ", "))
	}
	return s, nil
}

// New validates cfg and builds a communicator with the named strategy.
func New(ctx context.Context, name string, cfg Config) (Comm, error) {
	s, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if v, ok := s.(OptionValidator); ok {
		if err := v.ValidateOptions(cfg.Options); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return s.New(ctx, cfg)
}

// ServerConfig is what a server process of a strategy is given.
type ServerConfig struct {
	Index   int // this server's index, 0..Count-1
	Count   int // number of server processes
	Workers int // number of worker ranks (the communicator's size)
	// Store is the job's rendezvous store, shared with the workers; servers
	// publish their addresses in it.
	Store   Store
	Timeout time.Duration
	Options map[string]string
	// ListenHost is the interface to bind (default 127.0.0.1).
	ListenHost string
	// ShapeConn, if set, shapes the server's connections to the job's
	// network, as the workers' transport shapes theirs.
	ShapeConn func(net.Conn) net.Conn
	// JobID and Token are the job's, as every worker has them
	// (Config.JobID, Config.Token): a server serves only peers that prove
	// they hold Token.
	JobID string
	Token []byte
	Logf  func(format string, args ...any)
}

// Servers is an optional interface for strategies that run processes beside
// the workers, as a parameter server's dedicated servers. A launcher asks
// ServerProcesses how many to start, starts them, and calls Serve in each;
// Serve returns when the job is over (every worker has closed) or ctx ends.
type Servers interface {
	ServerProcesses(opts map[string]string, workers int) (int, error)
	Serve(ctx context.Context, cfg ServerConfig) error
}
