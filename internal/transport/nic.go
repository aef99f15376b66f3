package transport

import (
	"context"
	"net"

	"github.com/distbench/distbench/internal/linkspec"
)

// NIC shapes connections other than the mesh's (a parameter server's gRPC
// streams) so that they share a process's shaped NIC: one egress and one
// ingress rate for everything the process sends and receives. On such
// streams only the rate is modelled: a byte stream carries no message
// boundaries to hold back by the link's latency, and at the sizes where a
// parameter server is measured (megabytes) the rate is what counts.
type NIC struct {
	egress, ingress *pacer
}

// NewNIC returns a NIC shaped to l's rate; nil (which shapes nothing) when
// l has none.
func NewNIC(l linkspec.Link) *NIC {
	if l.Rate <= 0 {
		return nil
	}
	return &NIC{newPacer(l.Rate, nil), newPacer(l.Rate, nil)}
}

// NIC returns the mesh's own NIC, so that other connections of the process
// share its rate; nil when the mesh is unshaped.
func (t *TCP) NIC() *NIC {
	if t.egress == nil {
		return nil
	}
	return &NIC{t.egress, t.ingress}
}

// ShapeConn shapes c as one of the mesh's links: see NIC. It implements
// driver.ConnShaper.
func (t *TCP) ShapeConn(c net.Conn) net.Conn { return t.NIC().Conn(c) }

// Conn wraps c so that its traffic is paced by the NIC; a nil NIC returns c.
func (n *NIC) Conn(c net.Conn) net.Conn {
	if n == nil {
		return c
	}
	return &shapedConn{Conn: c, nic: n}
}

type shapedConn struct {
	net.Conn
	nic *NIC
}

// Write sends b a pacer chunk at a time, each when its serialization slot
// has ended.
func (s *shapedConn) Write(b []byte) (int, error) {
	e := s.nic.egress
	e.begin()
	defer e.end()
	written := 0
	for written < len(b) {
		c := min(len(b)-written, e.chunk)
		if err := e.wait(context.Background(), nil, c, false); err != nil {
			return written, err
		}
		n, err := s.Conn.Write(b[written : written+c])
		written += n
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// Read returns what arrived once the ingress rate allows it.
func (s *shapedConn) Read(b []byte) (int, error) {
	n, err := s.Conn.Read(b[:min(len(b), s.nic.ingress.chunk)])
	if n > 0 {
		in := s.nic.ingress
		in.begin()
		in.wait(context.Background(), nil, n, true)
		in.end()
	}
	return n, err
}
