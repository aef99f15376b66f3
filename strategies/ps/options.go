package ps

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/distbench/distbench/internal/units"
)

// Placements of the servers.
const (
	colocated = "colocated" // worker i < k also serves shard i, in-process
	dedicated = "dedicated" // k server processes beside the workers
)

// Defaults of the options.
const (
	// DefaultChunk is the unit of streaming: a push or pull message's
	// payload, and the grain at which a server reduces and releases a
	// shard. 1 MiB keeps per-message costs small against the copy while a
	// 64 MiB tensor still pipelines in dozens of chunks.
	DefaultChunk = 1 << 20
	// DefaultPartition is the smallest piece a tensor is cut into across
	// servers: a tensor of b bytes goes to min(k, ⌈b/partition⌉) servers,
	// so small tensors cost one push and one pull, not k of each.
	DefaultPartition = 256 << 10
)

// Transports of the servers' data.
const (
	meshTransport = "mesh" // the job's transport mesh (default)
	grpcTransport = "grpc" // gRPC streams
)

type options struct {
	transport   string
	servers     int // 0: as many as workers
	placement   string
	staleness   int
	chunk       int
	partition   int
	host        string
	peerTimeout time.Duration
	localAgg    bool // allreduce: reduce within each host before the push (core.Hierarchy)
}

const accepted = "transport, servers, placement, staleness, chunk, partition, host, peer-timeout, local_agg"

func parseOptions(opts map[string]string) (options, error) {
	o := options{transport: meshTransport, placement: colocated, chunk: DefaultChunk, partition: DefaultPartition, host: "127.0.0.1", peerTimeout: DefaultPeerTimeout}
	for k, v := range opts {
		switch k {
		case "transport":
			if v != meshTransport && v != grpcTransport {
				return o, fmt.Errorf("option transport=%q (accepted: %s, %s)", v, meshTransport, grpcTransport)
			}
			o.transport = v
		case "servers":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxWorkers {
				return o, fmt.Errorf("option servers=%q: want a count from 1 to %d", v, maxWorkers)
			}
			o.servers = n
		case "placement":
			if v != colocated && v != dedicated {
				return o, fmt.Errorf("option placement=%q (accepted: %s, %s)", v, colocated, dedicated)
			}
			o.placement = v
		case "staleness":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 1<<20 {
				return o, fmt.Errorf("option staleness=%q: want a step count from 0 (synchronous) to %d", v, 1<<20)
			}
			o.staleness = n
		case "chunk", "partition":
			n, err := units.ParseBytes(v)
			if err != nil {
				return o, fmt.Errorf("option %s: %w", k, err)
			}
			if k == "chunk" {
				if n < minChunk || n > maxChunk {
					return o, fmt.Errorf("option chunk=%s out of range (accepted: %s to %s)", v, units.FormatBytes(minChunk), units.FormatBytes(maxChunk))
				}
				o.chunk = int(n)
			} else {
				if n < 1 || n > 1<<30 {
					return o, fmt.Errorf("option partition=%s out of range (accepted: 1B to 1GiB)", v)
				}
				o.partition = int(n)
			}
		case "host":
			if net.ParseIP(v) == nil && v != "localhost" {
				return o, fmt.Errorf("option host=%q: want an IP address to listen on", v)
			}
			o.host = v
		case "local_agg":
			if v != "0" && v != "1" {
				return o, fmt.Errorf("option local_agg=%q (accepted: 0, 1)", v)
			}
			o.localAgg = v == "1"
		case "peer-timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d < minPeerTimeout || d > maxPeerTimeout {
				return o, fmt.Errorf("option peer-timeout=%q: want a duration from %v to %v", v, minPeerTimeout, maxPeerTimeout)
			}
			o.peerTimeout = d
		default:
			return o, fmt.Errorf("unknown option %q (accepted: %s)", k, accepted)
		}
	}
	return o, nil
}
