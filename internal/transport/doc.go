// Package transport moves tagged messages between the ranks of one job. It
// implements collective.Transport twice: over TCP between processes (the
// mesh distbench measures), and in memory between goroutines (for unit tests,
// with seeded delays to shake out ordering bugs).
//
// Both share one matching engine, [Mailbox]: per source rank, messages are
// matched to receives by tag in FIFO order. A receive posted before its
// message arrives is filled in place by the connection's reader, with no
// intermediate copy; a message that arrives first waits in the unexpected
// queue, as in MPI's eager protocol.
package transport
