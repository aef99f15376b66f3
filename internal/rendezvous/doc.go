// Package rendezvous is how the processes of one job find each other: a
// small key-value store they all share (driver.Store), and Join, which
// registers each process's rank in it and returns once the whole world has
// arrived, as torch.distributed.init_process_group does.
//
// # Usage
//
// A worker started by torchrun, mpirun, mpiexec or srun joins with the
// rank and size its launcher put in the environment:
//
//	sess, err := rendezvous.Join(ctx, rendezvous.Options{
//		URL:     "env://", // MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, ...
//		Rank:    -1,       // -1: from the environment
//		Size:    -1,
//		Timeout: 2 * time.Minute,
//		JobID:   "sweep-42",
//	})
//	if err != nil {
//		return err // names missing ranks, duplicate ranks, mismatched sizes
//	}
//	defer sess.Close()
//	st := sess.Store()
//	st.Set(ctx, fmt.Sprintf("addr/%d", sess.Rank()), []byte(myAddr))
//	peer, err := st.Get(ctx, "addr/0") // waits until rank 0 has set it
//
// Without a launcher, name the store and the ranks yourself:
// "tcp://10.0.0.1:29500" (rank 0 hosts it) or "file:///shared/job42.store"
// (any filesystem whose flock works across the hosts that use it).
//
// # Environments
//
// [FromEnv] reads, in this order of precedence, torchrun's RANK,
// WORLD_SIZE and LOCAL_RANK; Open MPI's OMPI_COMM_WORLD_RANK, _SIZE and
// _LOCAL_RANK; MPICH's PMI_RANK, PMI_SIZE and MPI_LOCALRANKID; Slurm's
// SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID. env:// also needs
// MASTER_ADDR and MASTER_PORT, which torchrun sets. Under srun they default
// to the first host of SLURM_STEP_NODELIST (Slurm's compressed host lists:
// [ExpandHostlist]) and [SlurmPortBase] + SLURM_JOB_ID mod 10000 (see
// engine.go); under Open MPI and MPICH, which name no host to their ranks,
// the error says how to pass them (mpirun -x, mpiexec -genv) or to use a
// file:// store instead. A missing or garbled variable is an [*EnvError]
// naming it.
//
// # Who hosts the TCP store
//
// For tcp:// and env://, rank 0 starts a [Server] on the URL's address
// (binding only that interface) and every rank, rank 0 included, connects
// with a [Client], retrying until the timeout because rank 0 may start
// last. Where a launcher hosts a distbench store instead, set
// Options.External; rank 0 then only connects.
//
// torchrun's agent hosts torch's own c10d TCPStore at MASTER_ADDR:
// MASTER_PORT and says so with TORCHELASTIC_USE_AGENT_STORE=True, as
// torch's env:// reads it. env:// then (or Options.Torch) speaks torch's
// protocol through [DialTorch] (torch 1.x and 2.x, told apart by one probe;
// see torchwire.go), with distbench's keys under "distbench/"; that store
// has no authentication, as in torch, and the Token is not used for it.
//
// Without either, a rank 0 that finds the port taken does not fail on the
// bind: it connects to whatever holds the port and lets the protocol
// decide. A launcher's store for this job works as if External had been
// set; another job's store refuses the JobID; a program that is not a store
// fails the handshake; a second process claiming rank 0 meets the first in
// registration and both get a duplicate-rank error naming each other. Each
// of these is clearer than "address already in use". Rank 0's
// Session.Close waits for the other ranks to disconnect before stopping
// its server, so the store does not vanish under a rank finishing late.
//
// # Registration
//
// Each rank announces its rank, world size and identity ("host/pid N",
// shown in errors). The first process to arrive fixes the world size; a
// later one with another size fails, and so does everyone else, at once,
// with a [*SizeMismatchError] naming both sizes and both processes. A rank
// claimed twice fails everyone at once with a [*DuplicateRankError] naming
// both identities. A Join that times out lists the ranks that never came
// ([*MissingRanksError], which matches collective.ErrTimeout), and the
// first rank to give up tells the rest, since the world can no longer
// complete. All of it is built from Store operations alone, so it behaves
// the same on both backends. A rank 0 whose Join failed keeps its server
// up for a few seconds, so that ranks still on their way read why.
//
// # Backends
//
// The TCP store speaks a small binary protocol (see protocol.go):
// length-prefixed frames, every length checked against [Limits] before
// anything is allocated, and request ids, so that one connection carries
// any number of concurrent calls. Each connection opens with the handshake
// of internal/wire, the one the mesh and the parameter server use, for the
// store service: the client proves it holds the job's Token without
// sending it. Get and Wait wait on the server, which answers when the key
// is set: one request per wait, not a polling loop. Without a Token, JobID
// is the secret (and is then kept out of the handshake's clear text): to
// keep out hostile peers, not just stray ones, give a random token, as
// distbench's launcher does, or make the JobID unguessable.
//
// The file store appends records to one file under flock and has no
// server, so Get and Wait poll, backing off to five reads a second. Join
// removes the file once all Size ranks have closed it, counting closes
// rather than open stores (as torch's FileStore does), so ranks that fail
// and leave early do not delete the verdict a late rank has yet to read. A
// job that crashed, or whose ranks never all came, leaves the file behind,
// and the next Join on it reports its ranks as already claimed by the old
// processes' identities: remove the file, or use a fresh path or JobID.
//
// Every call is bounded by its context's deadline and by the store's
// default timeout, whichever comes first; running out is a
// *collective.TimeoutError saying what was awaited, and matches
// collective.ErrTimeout.
package rendezvous
