// TCPOptions: what every rank of a TCP mesh must agree on, and defaults.

package transport

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/linkspec"
	"github.com/distbench/distbench/internal/wire"
)

// Defaults for TCPOptions.
const (
	DefaultKeyPrefix         = "transport/addr/"
	DefaultListenHost        = "127.0.0.1"
	DefaultMaxMessage        = 4 << 30
	DefaultConnectTimeout    = 60 * time.Second
	DefaultSocketBuffer      = 4 << 20
	DefaultHeartbeatInterval = 2 * time.Second
	DefaultPeerTimeout       = 30 * time.Second
	DefaultCloseTimeout      = 2 * time.Second
	// FailedCloseTimeout caps the wait for goodbyes when the job has
	// failed (an abort, or a peer's): part of the bound on how long after
	// a fault every rank ends (docs/design/faults.md).
	FailedCloseTimeout = 250 * time.Millisecond
)

// TCPOptions configures one rank's end of a TCP mesh. Every rank of a job
// must agree on Size, JobID, Token, MaxMessage, the liveness settings and
// Link.
type TCPOptions struct {
	Rank, Size int
	// Store is the job's rendezvous store, where each rank publishes its
	// listen address under KeyPrefix+rank. Not needed when Size is 1.
	Store     driver.Store
	KeyPrefix string // default DefaultKeyPrefix
	// JobID names the job (at most wire.MaxJobID bytes); a peer of another
	// job is refused.
	JobID string
	// Token is the job's shared secret; the handshake refuses a peer that
	// cannot prove it holds it. Required when Size > 1.
	Token []byte
	// ListenHost is the interface to bind; default 127.0.0.1. The port is
	// chosen by the system.
	ListenHost string
	// AdvertiseHost is the host peers dial; default ListenHost, or the
	// host name when ListenHost is an unspecified address (0.0.0.0, ::).
	AdvertiseHost string
	// HostID names this rank's host (driver.Topology); default
	// HostIdentity(). Ranks with equal HostIDs are taken to share memory.
	HostID string
	// MaxMessage bounds one message, sent or received; default
	// DefaultMaxMessage. A larger header from a peer breaks the connection.
	MaxMessage int64
	// ConnectTimeout bounds building the mesh: rendezvous, dialing (with
	// retries), accepting and every handshake. Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// HandshakeTimeout bounds one handshake; default wire.DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// SocketBuffer sets each socket's send and receive buffers, in bytes;
	// default DefaultSocketBuffer, negative leaves the system's.
	SocketBuffer int
	// HeartbeatInterval: an idle connection sends a heartbeat this often;
	// default DefaultHeartbeatInterval, negative sends none.
	HeartbeatInterval time.Duration
	// PeerTimeout: a peer that sends nothing, not even a heartbeat, for this
	// long is probed, and declared dead (its receives fail) if it then
	// stays silent for ProbeTimeout more. Default DefaultPeerTimeout;
	// negative never gives up (a stalled peer then stalls its receivers
	// until their own deadlines).
	PeerTimeout time.Duration
	// ProbeTimeout: how long a peer that PeerTimeout found silent has to
	// send anything at all, the probe's answer included, before it is
	// declared dead. Its reader answers a probe at once, a starved process
	// late and a stopped one never. Default twice PeerTimeout.
	ProbeTimeout time.Duration
	// CloseTimeout bounds Close and Abort: how long to wait for peers to
	// acknowledge the goodbye. Default DefaultCloseTimeout.
	CloseTimeout time.Duration
	// Spin, if positive, has each connection's reader poll its socket for
	// up to this long after the last bytes it read before it parks,
	// yielding to the process's other goroutines between polls. It trades a
	// core's time for a lower small-message latency: a waiting rank finds
	// its message without a poller and thread wake-up. Use it only when
	// every process has a core of its own (the local launcher sets it when
	// they do, with GOMAXPROCS at the process's share of the cores); 0 never
	// spins.
	Spin time.Duration
	// Transport says what carries the payloads of same-host pairs (ranks
	// with equal HostIDs): linkspec.TransportTCP ("" too) sends everything over
	// TCP; linkspec.TransportAuto carries same-host pairs through shared memory and
	// the rest over TCP, and keeps a pair that cannot share memory on TCP;
	// linkspec.TransportShm is auto that fails the mesh when some pair cannot. A
	// pair in shared memory keeps its TCP connection for control (goodbye,
	// abort, heartbeats, wait queries), and is never shaped: Link shapes
	// what crosses hosts, and linkspec.TransportTCP shapes every pair.
	Transport string
	// Link, if not nil, shapes the traffic as a NIC of that rate and
	// latency would; see linkspec.Link.
	Link *linkspec.Link
	// Logf, if set, receives diagnostic lines.
	Logf func(format string, args ...any)

	// clock, in tests, is the link shaper's virtual time; nil is real time.
	clock clock
	// cmaFrom, in tests, sends shared-memory messages of this many bytes
	// or more by CMA; negative: never; 0: as DISTBENCH_SHM_CMA says.
	cmaFrom int
	// ringSize, in tests, is the shared-memory rings' size; 0: by host.
	ringSize uint64
}

func (o *TCPOptions) setDefaults() {
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	if o.ListenHost == "" {
		o.ListenHost = DefaultListenHost
	}
	if o.AdvertiseHost == "" {
		o.AdvertiseHost = o.ListenHost
		if ip := net.ParseIP(o.ListenHost); ip != nil && ip.IsUnspecified() {
			if h, err := os.Hostname(); err == nil {
				o.AdvertiseHost = h
			}
		}
	}
	if o.HostID == "" {
		o.HostID = HostIdentity()
	}
	if o.MaxMessage == 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = wire.DefaultHandshakeTimeout
	}
	if o.SocketBuffer == 0 {
		o.SocketBuffer = DefaultSocketBuffer
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.PeerTimeout == 0 {
		o.PeerTimeout = DefaultPeerTimeout
	}
	if o.ProbeTimeout == 0 && o.PeerTimeout > 0 {
		o.ProbeTimeout = 2 * o.PeerTimeout
	}
	if o.CloseTimeout == 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
}

// Validate checks the options, with defaults applied, before any network is
// touched.
func (o *TCPOptions) Validate() error {
	c := *o
	c.setDefaults()
	switch {
	case c.Size < 1 || c.Size > wire.MaxWorldSize:
		return fmt.Errorf("transport: world size %d out of range (accepted: 1..%d)", c.Size, wire.MaxWorldSize)
	case c.Rank < 0 || c.Rank >= c.Size:
		return fmt.Errorf("transport: rank %d out of range for world size %d (accepted: 0..%d)", c.Rank, c.Size, c.Size-1)
	case len(c.JobID) > wire.MaxJobID:
		return fmt.Errorf("transport: job id of %d bytes exceeds the %d-byte limit", len(c.JobID), wire.MaxJobID)
	case c.MaxMessage < 0:
		return fmt.Errorf("transport: negative MaxMessage %d", c.MaxMessage)
	case c.ConnectTimeout < 0 || c.HandshakeTimeout < 0 || c.CloseTimeout < 0 || c.ProbeTimeout < 0:
		return fmt.Errorf("transport: negative timeout (connect %v, handshake %v, close %v, probe %v)", c.ConnectTimeout, c.HandshakeTimeout, c.CloseTimeout, c.ProbeTimeout)
	case c.Transport != "" && linkspec.CheckTransport(c.Transport) != nil:
		return linkspec.CheckTransport(c.Transport)
	case c.PeerTimeout > 0 && c.HeartbeatInterval > 0 && c.PeerTimeout < 2*c.HeartbeatInterval:
		return fmt.Errorf("transport: PeerTimeout %v must be at least twice HeartbeatInterval %v, or a live but idle peer is declared dead", c.PeerTimeout, c.HeartbeatInterval)
	}
	if c.Link != nil {
		if err := c.Link.Validate(); err != nil {
			return err
		}
	}
	if c.Size == 1 {
		return nil
	}
	switch {
	case c.Store == nil:
		return fmt.Errorf("transport: world size %d needs a rendezvous store (TCPOptions.Store)", c.Size)
	case len(c.Token) == 0:
		return errors.New("transport: empty job token (TCPOptions.Token); every rank of a job must share a non-empty secret, so that a stray or hostile peer is refused")
	}
	return nil
}
