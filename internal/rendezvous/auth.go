package rendezvous

import (
	"errors"
	"fmt"

	"github.com/distbench/distbench/internal/wire"
)

// The TCP store authenticates its clients with the handshake every
// connection of a job opens with (internal/wire), for the store service.
// A store serves processes, not ranks (the launcher, ranks, a strategy's
// servers), so the handshake's world is two: the store is rank 0 and every
// client rank 1.
const (
	storeRank  = 0
	clientRank = 1
)

// noSecret keys the handshake of a store given neither a token nor a job
// id: it then admits any distbench client, as a store with an empty job id
// always did.
var noSecret = []byte("distbench rendezvous: no secret")

// handshakeConfig is one side's handshake: the job's token is the secret.
// Without one, JobID is the secret (as for the mesh, whose workers use the
// job id when given no token), and then stays out of the hello, which
// crosses the wire in the clear: the MAC alone tells jobs apart. A token
// equal to the job id is the same as none, so that a process given the job
// id as its token meets a store given none.
func handshakeConfig(jobID string, token []byte, rank int) wire.HandshakeConfig {
	c := wire.HandshakeConfig{Service: wire.ServiceStore, JobID: jobID, Token: token, Rank: rank, Size: 2, Timeout: handshakeTimeout}
	if len(token) == 0 || string(token) == jobID {
		c.JobID, c.Token = "", []byte(jobID)
		if jobID == "" {
			c.Token = noSecret
		}
	}
	return c
}

// describeRefusal says why a handshake with the store failed in the
// store's terms, and whether retrying could help: a peer that is no store,
// speaks another version or serves another job will not change its mind,
// while a store that shed the connection to make room, or a connection
// that broke, may well accept the next one.
func describeRefusal(err error) (error, bool) {
	switch {
	case errors.Is(err, wire.ErrBadMagic), errors.Is(err, wire.ErrServiceMismatch):
		return fmt.Errorf("not a distbench rendezvous store: %w", err), true
	case errors.Is(err, wire.ErrVersion):
		return fmt.Errorf("the store speaks another protocol version: %w", err), true
	case errors.Is(err, wire.ErrJobMismatch), errors.Is(err, wire.ErrAuth):
		return fmt.Errorf("this store serves another job, or this client has the wrong token: %w", err), true
	case errors.Is(err, wire.ErrSizeMismatch), errors.Is(err, wire.ErrRankMismatch), errors.Is(err, wire.ErrTooLarge):
		return fmt.Errorf("not a distbench rendezvous store: %w", err), true
	}
	return err, false
}
