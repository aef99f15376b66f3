package driver

import (
	"context"
	"net"
	"time"
)

// ServerConfig is what a server process of a strategy is given.
type ServerConfig struct {
	Index   int // this server's index, 0..Count-1
	Count   int // number of server processes
	Workers int // number of worker ranks (the communicator's size)
	// Store is the job's rendezvous store, shared with the workers; servers
	// publish their addresses in it.
	Store Store
	// Transport, when the launcher gives one, is the server's end of the
	// job's mesh, which the workers' transports belong to as well: its
	// ranks are the workers 0..Workers-1 and the servers after them, this
	// one Workers+Index. A strategy that moves its data over it needs no
	// connections of its own.
	Transport Transport
	Timeout   time.Duration
	Options   map[string]string
	// ListenHost is the interface to bind (default 127.0.0.1).
	ListenHost string
	// ShapeConn, if set, shapes the server's connections to the job's
	// network, as the workers' transport shapes theirs.
	ShapeConn func(net.Conn) net.Conn
	// JobID and Token are the job's, as every worker has them
	// (collective.Config's JobID and Token): a server serves only peers
	// that prove they hold Token.
	JobID string
	Token []byte
	Logf  func(format string, args ...any)
}

// Servers is an optional strategy interface for strategies that run
// processes beside the workers, as a parameter server's dedicated servers.
// A launcher asks ServerProcesses how many to start, starts them, and calls
// Serve in each; Serve returns when the job is over (every worker has
// closed) or ctx ends.
type Servers interface {
	ServerProcesses(opts map[string]string, workers int) (int, error)
	Serve(ctx context.Context, cfg ServerConfig) error
}

// MeshServers is an optional interface of a Servers strategy whose server
// processes are, for some options, ranks of the job's mesh after the
// workers (ServerConfig.Transport): a launcher then builds the workers'
// mesh with room for them. Servers that make connections of their own need
// no place in it.
type MeshServers interface {
	ServersInMesh(opts map[string]string) bool
}
