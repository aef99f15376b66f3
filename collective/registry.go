package collective

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Strategy builds communicators. Strategies register one under a name from init.
type Strategy interface {
	New(ctx context.Context, cfg Config) (Comm, error)
}

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
