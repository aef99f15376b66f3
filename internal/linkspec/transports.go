package linkspec

import (
	"fmt"
	"runtime"
)

// ShmSupported says whether this platform has the shared-memory transport
// (Linux only).
const ShmSupported = runtime.GOOS == "linux"

// What a job's transport (transport.TCPOptions.Transport, --transport)
// accepts.
const (
	TransportAuto = "auto"
	TransportTCP  = "tcp"
	TransportShm  = "shm"
)

// Transports lists the accepted transports.
var Transports = []string{TransportAuto, TransportTCP, TransportShm}

// CheckTransport says whether s is an accepted transport, and which are.
func CheckTransport(s string) error {
	switch s {
	case TransportAuto, TransportTCP:
		return nil
	case TransportShm:
		if !ShmSupported {
			return fmt.Errorf("transport %q: shared memory is supported on Linux only (accepted here: auto, tcp)", s)
		}
		return nil
	}
	return fmt.Errorf("unknown transport %q (accepted: auto, tcp, shm)", s)
}
