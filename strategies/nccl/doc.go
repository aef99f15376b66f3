// Package nccl is the NVIDIA NCCL strategy. It calls libnccl.so.2 and the
// CUDA runtime through small cgo shims whose types and enum values are
// declared from NCCL's public nccl.h, so no CUDA SDK or header is needed to
// build it. Both are found and loaded by internal/cuda (the one place that
// loads the runtime): the system's library path, CUDA toolkits and the
// nvidia-nccl wheel of a Python environment, or what DISTBENCH_NCCL_LIB and
// DISTBENCH_CUDART_LIB name. Rank r's communicator is on the GPU
// cuda.Place gives it (its launcher's local rank, modulo the GPUs seen).
// Built with CGO_ENABLED=0 it still registers, and says it needs cgo.
//
// Each group gets its own communicator (not ncclCommSplit, which needs
// NCCL 2.18 on every rank and a call from non-members too), kept until the
// world communicator closes, created non-blocking
// (ncclCommInitRankConfig with blocking = 0) from a unique id that group
// rank 0 makes and hands to the others through the job's rendezvous store
// (or the transport, where there is no store). Every call is then polled,
// ncclCommGetAsyncError and cudaStreamQuery, against the operation's
// deadline; a timeout or an error aborts the communicator
// (ncclCommAbort), so that a dead or stuck rank ends the operation with an
// error that names this rank, the operation and its sequence number, never
// a hang: NCCL itself has no watchdog.
//
// Host tensors are copied to device memory and back around each call;
// device tensors (collective.Tensor.Mem, from internal/cuda) go to NCCL as
// they are, avg as ncclAvg (device.go).
// Gather, scatter and all-to-all are grouped sends and receives; barrier
// is a one-element allreduce. Point-to-point Send and Recv of the API go
// over the job's transport, as the engine (internal/core) runs them for
// every strategy, not through ncclSend/ncclRecv.
//
// The tests build a stand-in library (testdata/standin.c) that exports
// NCCL's and the CUDA runtime's symbols, keeps "device" memory in host
// memory and reduces for real across the ranks; it has been tested against
// that and against Debian's CUDA runtime only, until someone runs
// `make gpu-check` on a GPU.
package nccl
