/*
 * distbench.h: the C interface to distbench's collective API.
 *
 * libdistbench.so (built by `make capi` from capi/, a Go c-shared library)
 * runs distbench's strategies (ring, tree, ps, ...) on buffers the caller
 * owns. One communicator per job, made from the environment a launcher set
 * (torchrun, mpirun, srun: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and
 * distbench's own variables:
 *
 *   DISTBENCH_STRATEGY   ring (default), tree, ps, ...
 *   DISTBENCH_OPTIONS    the strategy's options: key=value,key=value
 *   DISTBENCH_TRANSPORT  tcp (default), auto, shm
 *   DISTBENCH_LINK       link shaping, as distbench's --link takes it
 *   DISTBENCH_TIMEOUT    per operation: seconds or a Go duration (default 5m)
 *   DISTBENCH_OUT        a directory: rank 0 appends every operation to
 *                        DIR/results.jsonl, which `distbench report DIR` renders
 *   DISTBENCH_TORCH_STORE=1  the store at MASTER_ADDR:MASTER_PORT is torch's
 *                        TCPStore (torchrun's agent sets
 *                        TORCHELASTIC_USE_AGENT_STORE, which says the same)
 *
 * Input buffers are not written (they are not declared const only because
 * cgo cannot declare them so). Every function returns DISTBENCH_OK or an error code; the message
 * distbench would print (naming the rank, its address, the operation and
 * its sequence number where a peer failed) is then distbench_last_error's,
 * per calling thread. Nothing panics across this interface.
 *
 * Operations are asynchronous: each returns a work handle at once, and
 * every work handle must be passed to distbench_wait until it returns
 * something other than DISTBENCH_ERR_AGAIN, which frees it. Operations on
 * one communicator complete in the order they were issued, which must be
 * the same on every rank. Buffers must stay valid and untouched until
 * their operation is done. Counts are in elements of dtype.
 */
#ifndef DISTBENCH_H
#define DISTBENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The interface's version: distbench_version() returns the library's. A
 * change that breaks callers increments it. */
#define DISTBENCH_CAPI_VERSION 1

typedef int64_t distbench_comm; /* a communicator; 0 is none */
typedef int64_t distbench_work; /* an operation in flight; 0 is none */

/* Status codes. */
#define DISTBENCH_OK 0
#define DISTBENCH_ERR_INVALID 1     /* a bad argument, setting or handle */
#define DISTBENCH_ERR_TIMEOUT 2     /* the operation's deadline passed */
#define DISTBENCH_ERR_PEER 3        /* a peer died, stalled or refused */
#define DISTBENCH_ERR_CLOSED 4      /* the communicator was closed */
#define DISTBENCH_ERR_UNSUPPORTED 5 /* the strategy does not do this */
#define DISTBENCH_ERR_AGAIN 6       /* distbench_wait: not done yet */
#define DISTBENCH_ERR_INTERNAL 7    /* anything else, a recovered panic included */

/* Element types (as distbench's collective.DType). */
#define DISTBENCH_FLOAT32 1
#define DISTBENCH_FLOAT64 2
#define DISTBENCH_FLOAT16 3
#define DISTBENCH_BFLOAT16 4
#define DISTBENCH_INT32 5
#define DISTBENCH_INT64 6
#define DISTBENCH_UINT8 7

/* Reductions (as distbench's collective.Op). */
#define DISTBENCH_SUM 1
#define DISTBENCH_PROD 2
#define DISTBENCH_MAX 3
#define DISTBENCH_MIN 4
#define DISTBENCH_AVG 5

int distbench_version(void);

/* distbench_last_error copies the calling thread's last error message
 * (NUL-terminated, truncated to fit) into buf and returns its full length;
 * 0 when the thread's last call succeeded. */
size_t distbench_last_error(char *buf, size_t len);

/* distbench_comm_create joins the job and builds its communicator. env,
 * if not NULL, is "NAME=VALUE" lines that override the process's
 * environment for this call only (a caller passes its own rank and size
 * this way). Blocks until every rank has joined or the timeout passes. */
int distbench_comm_create(char *env, distbench_comm *out);
/* distbench_comm_group makes a communicator of n of comm's ranks; its
 * rank i is ranks[i]. Every member calls it with the same list. */
int distbench_comm_group(distbench_comm comm, int32_t *ranks, int32_t n, distbench_comm *out);
int distbench_comm_rank(distbench_comm comm, int32_t *rank);
int distbench_comm_size(distbench_comm comm, int32_t *size);
/* The strategy's name, as distbench_last_error copies messages. */
size_t distbench_comm_strategy(distbench_comm comm, char *buf, size_t len);
/* distbench_comm_step labels the operations issued from now on as the
 * caller's training step n, in DISTBENCH_OUT's records. */
int distbench_comm_step(distbench_comm comm, int64_t step);
/* distbench_comm_destroy waits for the operations in flight and closes
 * comm (a group first, then the communicator it came from). */
int distbench_comm_destroy(distbench_comm comm);

/* In place: count elements of buf. */
int distbench_allreduce(distbench_comm comm, void *buf, int64_t count, int32_t dtype, int32_t op, distbench_work *w);
int distbench_reduce(distbench_comm comm, void *buf, int64_t count, int32_t dtype, int32_t op, int32_t root, distbench_work *w);
int distbench_broadcast(distbench_comm comm, void *buf, int64_t count, int32_t dtype, int32_t root, distbench_work *w);
/* count is in's; out holds size × count. */
int distbench_allgather(distbench_comm comm, void *out, void *in, int64_t count, int32_t dtype, distbench_work *w);
/* count is out's; in holds size × count. */
int distbench_reduce_scatter(distbench_comm comm, void *out, void *in, int64_t count, int32_t dtype, int32_t op, distbench_work *w);
/* count is in's (and out's): size blocks of count/size. */
int distbench_alltoall(distbench_comm comm, void *out, void *in, int64_t count, int32_t dtype, distbench_work *w);
/* count is in's; root's out holds size × count. */
int distbench_gather(distbench_comm comm, void *out, void *in, int64_t count, int32_t dtype, int32_t root, distbench_work *w);
/* count is out's; root's in holds size × count. */
int distbench_scatter(distbench_comm comm, void *out, void *in, int64_t count, int32_t dtype, int32_t root, distbench_work *w);
int distbench_barrier(distbench_comm comm, distbench_work *w);
int distbench_send(distbench_comm comm, void *buf, int64_t count, int32_t dtype, int32_t peer, int32_t tag, distbench_work *w);
int distbench_recv(distbench_comm comm, void *buf, int64_t count, int32_t dtype, int32_t peer, int32_t tag, distbench_work *w);

/* distbench_wait waits up to timeout_ms (negative: until the operation's
 * own deadline) and returns the operation's status, freeing w, or
 * DISTBENCH_ERR_AGAIN if it is still running (w stays valid). *busy_us,
 * if not NULL, gets how long the communicator spent on it. */
int distbench_wait(distbench_work w, int64_t timeout_ms, double *busy_us);

#ifdef __cplusplus
}
#endif

#endif /* DISTBENCH_H */
