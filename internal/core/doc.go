// Package core is the engine every strategy shares. A strategy supplies only
// its algorithms (the [Algorithms] interface, usually by embedding [Simple] and
// overriding what it does better); core turns them into a full
// collective.Comm:
//
//   - argument checks, the same for every strategy, before anything is sent;
//   - one serial executor per communicator, so collectives run in issue order
//     and their sequence numbers agree on every rank;
//   - tag spaces: each collective's messages carry its group and sequence
//     number, user point-to-point messages a separate space, so nothing from
//     one operation can be mistaken for another's;
//   - per-operation deadlines, and errors that name the strategy, operation,
//     sequence number and peer; a wait that reaches the deadline is
//     explained before the rank fails, by following the chain of waits over
//     the transport (a driver.Diagnoser) to the rank that stalls the job
//     ("rank 1 waits for rank 0, which waits for rank 3; rank 3
//     (10.0.0.4:4100) did not answer within 1s"), so that every rank's error
//     names it, not just a neighbour;
//   - on any failure, an abort of the transport, so that every rank of the job
//     fails promptly instead of waiting for its own deadline;
//   - Avg rewritten as Sum plus a division, and world size 1 handled once;
//   - one executor of pipelined schedules ([Schedule], [Call.Run]) that the
//     strategies' chunked algorithms compile to: every receive posted ahead
//     of its message, each send issued as soon as what it carries is in, and
//     no goroutine of its own.
package core
