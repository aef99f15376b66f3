package ps

import (
	"context"
	"fmt"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/core"
)

// Name is the strategy's registered name.
const Name = "ps"

func init() { collective.Register(Name, strategy{}) }

type strategy struct{}

var (
	_ collective.Describer       = strategy{}
	_ collective.OptionValidator = strategy{}
	_ driver.Servers             = strategy{}
	_ driver.MeshServers         = strategy{}
)

func (strategy) Description() string {
	return "parameter server over the job's mesh (or gRPC: transport=grpc): sharded push/pull with server-side reduction; colocated or dedicated servers; sync and bounded-staleness training"
}

func (strategy) ValidateOptions(opts map[string]string) error {
	_, err := parseOptions(opts)
	return err
}

// New builds a worker's communicator. With colocated placement, worker
// i < k starts server i in-process first and publishes its address; it
// then connects to the other servers in the background, so New waits for
// no other process (operations wait for the connections they need).
func (strategy) New(ctx context.Context, cfg collective.Config) (collective.Comm, error) {
	o, err := parseOptions(cfg.Options)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w, err := newWorld(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	g, err := core.New(Name, cfg, func(g *core.Group) (core.Algorithms, error) {
		return &algorithms{w: w, id: w.groupID(g)}, nil
	})
	if err != nil {
		w.close()
		return nil, err
	}
	return &comm{Group: g, w: w}, nil
}

// ServerProcesses is k for dedicated placement (default: one per worker)
// and 0 for colocated, whose servers live in the workers.
func (strategy) ServerProcesses(opts map[string]string, workers int) (int, error) {
	o, err := parseOptions(opts)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", Name, err)
	}
	if o.placement != dedicated {
		return 0, nil
	}
	if o.servers == 0 {
		return workers, nil
	}
	return o.servers, nil
}

// ServersInMesh: over the mesh (the default transport), dedicated servers
// are ranks of it.
func (strategy) ServersInMesh(opts map[string]string) bool {
	o, err := parseOptions(opts)
	return err == nil && o.transport == meshTransport
}

// Serve runs dedicated server cfg.Index: it listens on cfg.ListenHost,
// publishes its address under "ps/server/<index>" in the store, and serves
// until every worker has closed (nil) or ctx ends (an error saying how many
// had not; the server stops at once, failing RPCs in flight).
func (strategy) Serve(ctx context.Context, cfg driver.ServerConfig) error {
	o, err := parseOptions(cfg.Options)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	k := o.servers
	if k == 0 {
		k = cfg.Workers
	}
	switch {
	case o.placement != dedicated:
		return fmt.Errorf("%s: Serve with placement=%s: only dedicated servers run as processes", Name, o.placement)
	case cfg.Workers < 1 || cfg.Workers > maxWorkers:
		return fmt.Errorf("%s: server %d: %d workers (accepted: 1..%d)", Name, cfg.Index, cfg.Workers, maxWorkers)
	case cfg.Count != k:
		return fmt.Errorf("%s: server %d: launcher started %d servers, options say %d", Name, cfg.Index, cfg.Count, k)
	case cfg.Index < 0 || cfg.Index >= k:
		return fmt.Errorf("%s: server index %d out of range (accepted: 0..%d)", Name, cfg.Index, k-1)
	}
	if o.transport == meshTransport {
		return serveMesh(ctx, cfg, o, k)
	}
	if cfg.Store == nil {
		return fmt.Errorf("%s: server %d: needs the job's rendezvous store to publish its address", Name, cfg.Index)
	}
	auth := handshakeWorld(cfg.JobID, cfg.Token, cfg.Workers+cfg.Index, cfg.Workers, k)
	if err := auth.Validate(); err != nil {
		return fmt.Errorf("%s: server %d refuses any client that cannot prove it holds the job token (ServerConfig.Token): %w", Name, cfg.Index, err)
	}
	host := cfg.ListenHost
	if host == "" {
		host = "127.0.0.1"
	}
	s := newServer(cfg.Index, cfg.Workers, auth, o.peerTimeout, cfg.Logf)
	s.shape = cfg.ShapeConn
	if err := s.listen(host); err != nil {
		return err
	}
	defer s.stop()
	if err := cfg.Store.Set(ctx, serverKey(cfg.Index), []byte(s.addr())); err != nil {
		return fmt.Errorf("%s: server %d (%s): publishing its address: %w", Name, cfg.Index, s.addr(), err)
	}
	return s.serveUntil(ctx, s.addr())
}

// comm is a worker's communicator: core's engine over the ps algorithms,
// plus the training calls of collective.ParamServer.
type comm struct {
	*core.Group
	w *world
}

var (
	_ collective.Comm        = (*comm)(nil)
	_ collective.ParamServer = (*comm)(nil)
	_ collective.CloseWaiter = (*comm)(nil)
)

// Close closes the communicator, then says goodbye to the servers. It does
// not wait for the other workers; see CloseAndWait.
func (c *comm) Close() error {
	if c.w.tr != nil {
		// The mesh stays open until this process's server is done with it.
		c.Group.CloseLeavingTransport()
		c.w.close()
		return nil
	}
	err := c.Group.Close()
	c.w.close()
	return err
}

// CloseAndWait closes, then waits until this process's colocated server is
// no longer needed (every worker has closed), so that a process can exit
// without taking the server from workers still pulling from it.
func (c *comm) CloseAndWait(ctx context.Context) error {
	err := c.Close()
	if werr := c.w.waitLocal(ctx); err == nil {
		err = werr
	}
	return err
}

// opTimeout is the deadline of a training call.
func (c *comm) opTimeout() time.Duration { return c.w.cfg.OpTimeout() }
