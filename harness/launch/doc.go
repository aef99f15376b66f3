// Package launch starts a job's processes on this machine and is the
// protocol between a launcher and its workers.
//
// [Launch] runs a job.Spec as local worker processes of the distbench binary
// (plus a strategy's server processes) over loopback, with a rendezvous
// store hosted in the launcher: it shares the machine's cores out among them
// (GOMAXPROCS, the transport's spin budget, CPU binding), ties their lives
// to its own, and gathers rank 0's records from its stdout. The worker's
// side is [Worker]: it reads the spec and the job from the environment
// (EnvSpec and the other Env variables, which mpirun, srun or a Kubernetes
// Job may set instead), binds to its CPUs, and hands each record back as a
// RecordPrefix line. What a rank does in between (measure, train, soak) is
// the caller's RunFunc; this package imports no measurement.
package launch
