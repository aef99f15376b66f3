package collective

import (
	"fmt"
	"time"

	"github.com/distbench/distbench/collective/driver"
)

// DefaultTimeout bounds every operation unless Config.Timeout says otherwise.
const DefaultTimeout = 5 * time.Minute

// Config is what a strategy needs to build a communicator.
type Config struct {
	Rank int
	Size int
	// Transport connects this rank to every other; required when Size > 1.
	// It may have more ranks than Size: those from Size on are a
	// strategy's server processes (a parameter server's dedicated
	// servers, see driver.ServerConfig), which only that strategy
	// addresses.
	Transport driver.Transport
	// Store is the job's rendezvous store; strategies that place extra
	// processes (a parameter server's) use it. May be nil otherwise.
	Store driver.Store
	// Timeout bounds each operation; 0 means DefaultTimeout.
	Timeout time.Duration
	// Options are strategy-specific settings, such as "algo": "dbtree".
	Options map[string]string
	// JobID and Token are the job's identity and shared secret, as the
	// transport has them, for connections a strategy opens itself (a
	// parameter server's): a peer that cannot prove it holds Token is
	// refused before it can send anything.
	JobID string
	Token []byte
	// Logf, if set, receives diagnostic lines.
	Logf func(format string, args ...any)
	// KeepTransport leaves Transport open when the communicator closes:
	// its caller builds several communicators over it, one after another
	// (a sweep inside one engine allocation), and closes it itself.
	KeepTransport bool
}

// Validate checks the configuration before any network is touched.
func (c *Config) Validate() error {
	switch {
	case c.Size < 1:
		return fmt.Errorf("collective: world size %d: must be at least 1", c.Size)
	case c.Rank < 0 || c.Rank >= c.Size:
		return fmt.Errorf("collective: rank %d out of range for world size %d (accepted: 0..%d)", c.Rank, c.Size, c.Size-1)
	case c.Size > 1 && c.Transport == nil:
		return fmt.Errorf("collective: world size %d needs a transport", c.Size)
	case c.Transport != nil && (c.Transport.Rank() != c.Rank || c.Transport.Size() < c.Size):
		return fmt.Errorf("collective: transport is rank %d of %d, config says rank %d of %d (accepted: the same rank, of at least as many)",
			c.Transport.Rank(), c.Transport.Size(), c.Rank, c.Size)
	case c.Timeout < 0:
		return fmt.Errorf("collective: negative timeout %v", c.Timeout)
	}
	return nil
}

// OpTimeout is the effective per-operation timeout.
func (c *Config) OpTimeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}
