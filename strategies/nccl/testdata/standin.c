// A stand-in for libnccl.so.2 and the CUDA runtime, for tests on machines
// with no GPU. It exports the symbols distbench's nccl strategy loads, with
// NCCL's ABI (types and enum values as in NVIDIA/nccl src/nccl.h.in, NCCL
// 2.18 layout of ncclConfig_t), and does real reductions across the ranks of
// a communicator: "device memory" is host memory, a stream is a worker
// thread, and the ranks meet at a hub thread that ncclGetUniqueId starts in
// the calling process and that the unique id names (127.0.0.1:port).
//
// DISTBENCH_STANDIN_STRICT=1 refuses (ncclInvalidUsage) a communicator
// that is not made non-blocking with a config exactly as
// NCCL_CONFIG_INITIALIZER of NCCL 2.18 leaves it but for blocking = 0.
//
// Injected failures, read at ncclCommInitRankConfig:
//   DISTBENCH_STANDIN_FAIL=r:k  rank r's call k (0-based) sets an async error
//   DISTBENCH_STANDIN_HANG=r:k  rank r's call k never completes until aborted
//
// Build: gcc -shared -fPIC -O2 -pthread standin.c -o libnccl.so.2
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { ncclSuccess = 0, ncclSystemError = 2, ncclInternalError = 3, ncclInvalidArgument = 4,
       ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7 };
enum { cudaSuccess = 0, cudaErrorNotReady = 600 };
enum { K_ALLREDUCE = 1, K_REDUCE, K_BROADCAST, K_ALLGATHER, K_REDUCESCATTER, K_GROUP, K_BYE };
enum { P_SEND = 1, P_RECV = 2 };

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct {
	size_t size; unsigned magic; unsigned version;
	int blocking, cgaClusterSize, minCTAs, maxCTAs; const char *netName; int splitShare;
} ncclConfig_t;

#define ID_MAGIC "distbench-standin"

// ---- streams ----------------------------------------------------------

struct task;
typedef struct stream {
	pthread_mutex_t mu; pthread_cond_t cv;
	struct task *head, *tail; int busy, quit;
	pthread_t th;
} stream;

typedef struct p2p { int type, peer; size_t bytes; void *buf; } p2p;

typedef struct ncclComm {
	int rank, nranks, fd;
	volatile int aborted, err;
	int nonblocking;
	int calls, failAt, hangAt;
	char last[256];
	pthread_mutex_t mu;
	char host[64]; int port;
} ncclComm;

typedef struct task {
	struct task *next;
	ncclComm *comm;
	int kind, dtype, op, root, hang;
	size_t count;
	const void *send; void *recv;
	p2p *ops; int nops;
} task;

static void run_task(task *t);

static void *stream_main(void *arg) {
	stream *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head && !s->quit) pthread_cond_wait(&s->cv, &s->mu);
		if (!s->head) break;
		task *t = s->head;
		pthread_mutex_unlock(&s->mu);
		run_task(t);
		pthread_mutex_lock(&s->mu);
		s->head = t->next;
		if (!s->head) s->tail = NULL;
		free(t->ops);
		free(t);
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int cudaStreamCreate(stream **out) {
	stream *s = calloc(1, sizeof *s);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_create(&s->th, NULL, stream_main, s);
	*out = s;
	return cudaSuccess;
}

static void enqueue(stream *s, task *t) {
	pthread_mutex_lock(&s->mu);
	if (s->tail) s->tail->next = t; else s->head = t;
	s->tail = t;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

int cudaStreamQuery(stream *s) {
	pthread_mutex_lock(&s->mu);
	int busy = s->head != NULL;
	pthread_mutex_unlock(&s->mu);
	return busy ? cudaErrorNotReady : cudaSuccess;
}

int cudaStreamSynchronize(stream *s) {
	pthread_mutex_lock(&s->mu);
	while (s->head) pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	return cudaSuccess;
}

// cudaStreamDestroy leaves a stream whose tasks still run (an aborted
// communicator's) to finish them; it never frees one that is in use.
int cudaStreamDestroy(stream *s) {
	pthread_mutex_lock(&s->mu);
	s->quit = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_detach(s->th);
	return cudaSuccess;
}

// Built with -DSTANDIN_COUNT_ERROR=35 it is a runtime too new for the
// driver (cudaErrorInsufficientDriver), for internal/cuda's test of
// passing over one.
#ifdef STANDIN_COUNT_ERROR
int cudaGetDeviceCount(int *n) { *n = 0; return STANDIN_COUNT_ERROR; }
#else
int cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
#endif
int cudaSetDevice(int d) { return d == 0 ? cudaSuccess : 101; /* cudaErrorInvalidDevice */ }
int cudaMalloc(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? cudaSuccess : 2; }
int cudaFree(void *p) { free(p); return cudaSuccess; }
// Pinned host memory is ordinary host memory here, as device memory is.
int cudaMallocHost(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? cudaSuccess : 2; }
int cudaFreeHost(void *p) { free(p); return cudaSuccess; }
int cudaMemcpy(void *dst, const void *src, size_t n, int kind) { (void)kind; memmove(dst, src, n); return cudaSuccess; }
int cudaRuntimeGetVersion(int *v) { *v = 12000; return cudaSuccess; }
int cudaDriverGetVersion(int *v) { *v = 12000; return cudaSuccess; }
// What gpu-check shows of the one stand-in device: a bus id no real GPU
// has, compute capability 0.0, one multiprocessor, 1 GiB.
int cudaDeviceGetPCIBusId(char *bus, int len, int d) {
	if (d != 0) return 101;
	snprintf(bus, len, "0000:00:00.0");
	return cudaSuccess;
}
int cudaDeviceGetAttribute(int *v, int attr, int d) {
	if (d != 0) return 101;
	switch (attr) {
	case 16: *v = 1; return cudaSuccess;            // cudaDevAttrMultiProcessorCount
	case 75: case 76: *v = 0; return cudaSuccess;   // compute capability major, minor
	}
	return 1; // cudaErrorInvalidValue
}
int cudaMemGetInfo(size_t *free, size_t *total) { *free = *total = (size_t)1 << 30; return cudaSuccess; }
const char *cudaGetErrorString(int e) {
	switch (e) {
	case 0: return "no error";
	case 35: return "CUDA driver version is insufficient for CUDA runtime version";
	case 600: return "device not ready";
	case 100: return "no CUDA-capable device is detected";
	default: return "unknown error";
	}
}

// ---- socket helpers ----------------------------------------------------

static int full_write(int fd, const void *p, size_t n) {
	const char *b = p;
	while (n > 0) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) return -1;
		b += k; n -= (size_t)k;
	}
	return 0;
}

static int full_read(int fd, void *p, size_t n) {
	char *b = p;
	while (n > 0) {
		ssize_t k = recv(fd, b, n, 0);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) return -1;
		b += k; n -= (size_t)k;
	}
	return 0;
}

// ---- reductions ---------------------------------------------------------

static float h2f(uint16_t h) {
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 0x3ff, bits;
	if (e == 0) {
		if (m == 0) bits = s;
		else { e = 127 - 15 + 1; while (!(m & 0x400)) { m <<= 1; e--; } m &= 0x3ff; bits = s | e << 23 | m << 13; }
	} else if (e == 31) bits = s | 0xff << 23 | m << 13;
	else bits = s | (e - 15 + 127) << 23 | m << 13;
	float f; memcpy(&f, &bits, 4); return f;
}

static uint16_t f2h(float f) {
	uint32_t x; memcpy(&x, &f, 4);
	uint32_t s = (x >> 16) & 0x8000; int e = (int)((x >> 23) & 0xff) - 127 + 15; uint32_t m = x & 0x7fffff;
	if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(s | 0x7c00 | (m ? 0x200 : 0));
	if (e >= 31) return (uint16_t)(s | 0x7c00);
	if (e <= 0) {
		if (e < -10) return (uint16_t)s;
		m |= 0x800000; int shift = 14 - e; uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1))) r++;
		return (uint16_t)(s | r);
	}
	uint32_t r = m >> 13, rem = m & 0x1fff;
	uint32_t h = s | (uint32_t)e << 10 | r;
	if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) h++;
	return (uint16_t)h;
}

static float b2f(uint16_t b) { uint32_t x = (uint32_t)b << 16; float f; memcpy(&f, &x, 4); return f; }
static uint16_t f2b(float f) {
	uint32_t x; memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

// FP8 (NCCL 2.24's ncclFloat8e4m3 10, ncclFloat8e5m2 11), as distbench's
// collective package defines them: E4M3 without infinities, both rounding
// to nearest even and saturating at the largest finite value. Encoding
// searches the codes: slow, and plain enough to trust in a stand-in.
static float f8dec(uint8_t b, int e4) {
	int mb = e4 ? 3 : 2, eb = e4 ? 4 : 5, bias = e4 ? 7 : 15;
	int e = (b >> mb) & ((1 << eb) - 1), m = b & ((1 << mb) - 1);
	float v;
	if (!e4 && e == 31) v = m ? __builtin_nanf("") : __builtin_inff();
	else if (e4 && e == 15 && m == 7) v = __builtin_nanf("");
	else {
		int ex = (e == 0 ? 1 : e) - bias - mb;
		v = (float)(e == 0 ? m : m + (1 << mb));
		for (; ex > 0; ex--) v *= 2;
		for (; ex < 0; ex++) v /= 2;
	}
	return (b & 0x80) ? -v : v;
}

static uint8_t f8enc(float f, int e4) {
	if (f != f) return 0x7f;
	uint8_t s = (f < 0 || (f == 0 && 1 / f < 0)) ? 0x80 : 0, maxc = e4 ? 0x7e : 0x7b, best = 0;
	float a = s ? -f : f, bd = a;
	if (a >= f8dec(maxc, e4)) return s | maxc;
	for (int c = 1; c <= maxc; c++) {
		float d = f8dec((uint8_t)c, e4) - a;
		if (d < 0) d = -d;
		if (d < bd || (d == bd && !(c & 1))) { bd = d; best = (uint8_t)c; }
	}
	return s | best;
}

#define REDF8(E4) do { uint8_t *d = dst; const uint8_t *s = src; for (size_t i = 0; i < n; i++) { float a = f8dec(d[i], E4), b = f8dec(s[i], E4); \
	d[i] = f8enc(op == 1 ? a * b : op == 2 ? (a > b ? a : b) : op == 3 ? (a < b ? a : b) : a + b, E4); } } while (0)

#define RED(T) do { T *d = dst; const T *s = src; for (size_t i = 0; i < n; i++) { T a = d[i], b = s[i]; \
	d[i] = op == 1 ? (T)(a * b) : op == 2 ? (a > b ? a : b) : op == 3 ? (a < b ? a : b) : (T)(a + b); } } while (0)
#define REDH(CV, BK) do { uint16_t *d = dst; const uint16_t *s = src; for (size_t i = 0; i < n; i++) { float a = CV(d[i]), b = CV(s[i]); \
	d[i] = BK(op == 1 ? a * b : op == 2 ? (a > b ? a : b) : op == 3 ? (a < b ? a : b) : a + b); } } while (0)

static size_t dsize(int dt) {
	static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
	return dt >= 0 && dt < 12 ? s[dt] : 0;
}

// reduce computes dst = dst op src over n elements; avg sums.
static void reduce(int dt, int op, void *dst, const void *src, size_t n) {
	switch (dt) {
	case 0: RED(int8_t); break;
	case 1: RED(uint8_t); break;
	case 2: RED(int32_t); break;
	case 3: RED(uint32_t); break;
	case 4: RED(int64_t); break;
	case 5: RED(uint64_t); break;
	case 6: REDH(h2f, f2h); break;
	case 7: RED(float); break;
	case 8: RED(double); break;
	case 9: REDH(b2f, f2b); break;
	case 10: REDF8(1); break;
	case 11: REDF8(0); break;
	}
}

static void divide(int dt, void *buf, size_t n, int by) {
	for (size_t i = 0; i < n; i++) switch (dt) {
	case 0: ((int8_t *)buf)[i] /= by; break;
	case 1: ((uint8_t *)buf)[i] /= by; break;
	case 2: ((int32_t *)buf)[i] /= by; break;
	case 3: ((uint32_t *)buf)[i] /= by; break;
	case 4: ((int64_t *)buf)[i] /= by; break;
	case 5: ((uint64_t *)buf)[i] /= by; break;
	case 6: ((uint16_t *)buf)[i] = f2h(h2f(((uint16_t *)buf)[i]) / by); break;
	case 7: ((float *)buf)[i] /= by; break;
	case 8: ((double *)buf)[i] /= by; break;
	case 9: ((uint16_t *)buf)[i] = f2b(b2f(((uint16_t *)buf)[i]) / by); break;
	case 10: ((uint8_t *)buf)[i] = f8enc(f8dec(((uint8_t *)buf)[i], 1) / by, 1); break;
	case 11: ((uint8_t *)buf)[i] = f8enc(f8dec(((uint8_t *)buf)[i], 0) / by, 0); break;
	}
}

// ---- the hub ------------------------------------------------------------

typedef struct { uint32_t kind, dtype, op, root; uint64_t count, len; } reqhdr;
typedef struct { int32_t status; uint32_t pad; uint64_t len; } rephdr;
typedef struct { reqhdr h; char *data; } req;
typedef struct msg { struct msg *next; size_t len; char *data; } msg;
typedef struct round { struct round *next; uint64_t seq; int arrived, left; req *reqs; } round;

typedef struct hub {
	pthread_mutex_t mu; pthread_cond_t cv;
	int lfd, nranks, joined, aborted;
	char why[200];
	int *fds;
	round *rounds;
	msg **box, **boxtail; // box[src*n+dst]
} hub;

typedef struct { hub *h; int rank; } handler_arg;

static const char *kindname(int k) {
	static const char *s[] = {"?", "allreduce", "reduce", "broadcast", "allgather", "reducescatter", "send/recv group"};
	return k >= 0 && k <= K_GROUP ? s[k] : "?";
}

static void hub_abort(hub *h, const char *why) {
	pthread_mutex_lock(&h->mu);
	if (!h->aborted) {
		h->aborted = 1;
		snprintf(h->why, sizeof h->why, "%s", why);
	}
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static int reply(int fd, int status, const void *data, size_t len) {
	rephdr r = {status, 0, len};
	if (full_write(fd, &r, sizeof r)) return -1;
	return len ? full_write(fd, data, len) : 0;
}

static int reply_err(int fd, int status, const char *fmt, const char *a) {
	char buf[400];
	snprintf(buf, sizeof buf, fmt, a);
	return reply(fd, status, buf, strlen(buf));
}

// collective runs one collective round for rank r and replies with its result.
static int collective(hub *h, int r, uint64_t seq, req q) {
	int n = h->nranks;
	pthread_mutex_lock(&h->mu);
	round *rd = h->rounds;
	while (rd && rd->seq != seq) rd = rd->next;
	if (!rd) {
		rd = calloc(1, sizeof *rd);
		rd->seq = seq;
		rd->reqs = calloc((size_t)n, sizeof(req));
		rd->next = h->rounds;
		h->rounds = rd;
	}
	rd->reqs[r] = q;
	rd->arrived++;
	pthread_cond_broadcast(&h->cv);
	while (rd->arrived < n && !h->aborted) pthread_cond_wait(&h->cv, &h->mu);
	if (rd->arrived < n) { // a round every rank joined completes, abort or not
		char why[300];
		snprintf(why, sizeof why, "%s, during %s #%llu", h->why, kindname((int)q.h.kind), (unsigned long long)seq);
		pthread_mutex_unlock(&h->mu);
		return reply_err(h->fds[r], ncclRemoteError, "%s", why);
	}
	pthread_mutex_unlock(&h->mu);

	int status = ncclSuccess;
	char errbuf[300] = "";
	size_t es = dsize((int)q.h.dtype), cnt = q.h.count, blk = cnt * es;
	for (int i = 0; i < n && status == ncclSuccess; i++) {
		reqhdr o = rd->reqs[i].h;
		if (o.kind != q.h.kind || o.count != q.h.count || o.dtype != q.h.dtype || o.op != q.h.op || o.root != q.h.root) {
			status = ncclInvalidUsage;
			snprintf(errbuf, sizeof errbuf, "ranks disagree on call #%llu: rank %d issued %s of %llu elements (dtype %u, op %u, root %u), rank %d %s of %llu (dtype %u, op %u, root %u)",
				(unsigned long long)seq, r, kindname((int)q.h.kind), (unsigned long long)cnt, q.h.dtype, q.h.op, q.h.root,
				i, kindname((int)o.kind), (unsigned long long)o.count, o.dtype, o.op, o.root);
		}
	}
	char *out = NULL;
	size_t outlen = 0;
	if (status == ncclSuccess) switch (q.h.kind) {
	case K_ALLREDUCE:
	case K_REDUCE:
		if (q.h.kind == K_REDUCE && (uint32_t)r != q.h.root) break;
		outlen = blk; out = malloc(blk ? blk : 1);
		memcpy(out, rd->reqs[0].data, blk);
		for (int i = 1; i < n; i++) reduce((int)q.h.dtype, (int)q.h.op, out, rd->reqs[i].data, cnt);
		if (q.h.op == 4) divide((int)q.h.dtype, out, cnt, n);
		break;
	case K_BROADCAST:
		outlen = blk; out = malloc(blk ? blk : 1);
		memcpy(out, rd->reqs[q.h.root].data, blk);
		break;
	case K_ALLGATHER:
		outlen = blk * (size_t)n; out = malloc(outlen ? outlen : 1);
		for (int i = 0; i < n; i++) memcpy(out + (size_t)i * blk, rd->reqs[i].data, blk);
		break;
	case K_REDUCESCATTER:
		outlen = blk; out = malloc(blk ? blk : 1);
		memcpy(out, rd->reqs[0].data + (size_t)r * blk, blk);
		for (int i = 1; i < n; i++) reduce((int)q.h.dtype, (int)q.h.op, out, rd->reqs[i].data + (size_t)r * blk, cnt);
		if (q.h.op == 4) divide((int)q.h.dtype, out, cnt, n);
		break;
	}
	int rc = status == ncclSuccess ? reply(h->fds[r], 0, out, outlen) : reply(h->fds[r], status, errbuf, strlen(errbuf));
	free(out);
	pthread_mutex_lock(&h->mu);
	if (++rd->left == n) {
		round **pp = &h->rounds;
		while (*pp != rd) pp = &(*pp)->next;
		*pp = rd->next;
		for (int i = 0; i < n; i++) free(rd->reqs[i].data);
		free(rd->reqs);
		free(rd);
	}
	pthread_mutex_unlock(&h->mu);
	return rc;
}

// group runs rank r's sends and receives: sends go to the peers' mailboxes
// first, so that no consistent pattern of groups can deadlock.
static int group(hub *h, int r, req q) {
	int n = h->nranks, nops = (int)q.h.count;
	char *p = q.data;
	size_t total = 0;
	struct { uint32_t type, peer; uint64_t bytes; } *hd;
	int rc = 0, status = ncclSuccess;
	char errbuf[300] = "";
	char **recvs = calloc((size_t)nops + 1, sizeof(char *));
	pthread_mutex_lock(&h->mu);
	for (int i = 0; i < nops; i++) {
		hd = (void *)p; p += sizeof *hd;
		if (hd->type == P_SEND) {
			msg *m = calloc(1, sizeof *m);
			m->len = hd->bytes; m->data = malloc(hd->bytes ? hd->bytes : 1);
			memcpy(m->data, p, hd->bytes); p += hd->bytes;
			int b = r * n + (int)hd->peer;
			if (h->boxtail[b]) h->boxtail[b]->next = m; else h->box[b] = m;
			h->boxtail[b] = m;
		}
	}
	pthread_cond_broadcast(&h->cv);
	p = q.data;
	for (int i = 0; i < nops && status == ncclSuccess; i++) {
		hd = (void *)p; p += sizeof *hd;
		if (hd->type == P_SEND) { p += hd->bytes; continue; }
		int b = (int)hd->peer * n + r;
		while (!h->box[b] && !h->aborted) pthread_cond_wait(&h->cv, &h->mu);
		if (!h->box[b]) {
			status = ncclRemoteError;
			snprintf(errbuf, sizeof errbuf, "%s, during a receive from rank %u", h->why, hd->peer);
			break;
		}
		msg *m = h->box[b];
		h->box[b] = m->next;
		if (!h->box[b]) h->boxtail[b] = NULL;
		if (m->len != hd->bytes) {
			status = ncclInvalidUsage;
			snprintf(errbuf, sizeof errbuf, "rank %d received %llu bytes from rank %u, expected %llu",
				r, (unsigned long long)m->len, hd->peer, (unsigned long long)hd->bytes);
		}
		recvs[i] = m->data;
		total += m->len;
		free(m);
	}
	pthread_mutex_unlock(&h->mu);
	if (status != ncclSuccess) {
		rc = reply(h->fds[r], status, errbuf, strlen(errbuf));
	} else {
		char *out = malloc(total ? total : 1), *o = out;
		p = q.data;
		for (int i = 0; i < nops; i++) {
			hd = (void *)p; p += sizeof *hd;
			if (hd->type == P_SEND) { p += hd->bytes; continue; }
			memcpy(o, recvs[i], hd->bytes); o += hd->bytes;
		}
		rc = reply(h->fds[r], 0, out, total);
		free(out);
	}
	for (int i = 0; i < nops; i++) free(recvs[i]);
	free(recvs);
	return rc;
}

static void *handler_main(void *arg) {
	handler_arg a = *(handler_arg *)arg;
	free(arg);
	hub *h = a.h;
	int r = a.rank, fd;
	pthread_mutex_lock(&h->mu);
	while (h->joined < h->nranks && !h->aborted) pthread_cond_wait(&h->cv, &h->mu);
	fd = h->fds[r];
	pthread_mutex_unlock(&h->mu);
	if (reply(fd, 0, NULL, 0)) goto out;
	for (uint64_t seq = 0;;) {
		req q;
		if (full_read(fd, &q.h, sizeof q.h)) break;
		if (q.h.kind == K_BYE) { // ncclCommDestroy: leaving is no failure
			close(fd);
			return NULL;
		}
		q.data = malloc(q.h.len ? q.h.len : 1);
		if (full_read(fd, q.data, q.h.len)) { free(q.data); break; }
		int rc;
		if (q.h.kind == K_GROUP) { rc = group(h, r, q); free(q.data); }
		else rc = collective(h, r, seq++, q);
		if (rc) break;
	}
out:;
	char why[120];
	snprintf(why, sizeof why, "rank %d left the communicator (it aborted, failed or exited)", r);
	hub_abort(h, why);
	close(fd);
	return NULL;
}

static void *accept_main(void *arg) {
	hub *h = arg;
	for (;;) {
		int fd = accept(h->lfd, NULL, NULL);
		if (fd < 0) { if (errno == EINTR) continue; break; }
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		uint32_t hello[2];
		if (full_read(fd, hello, sizeof hello)) { close(fd); continue; }
		pthread_mutex_lock(&h->mu);
		if (h->nranks == 0) {
			int n = (int)hello[1];
			h->nranks = n;
			h->fds = calloc((size_t)n, sizeof(int));
			h->box = calloc((size_t)n * (size_t)n, sizeof(msg *));
			h->boxtail = calloc((size_t)n * (size_t)n, sizeof(msg *));
		}
		if ((int)hello[1] != h->nranks || (int)hello[0] >= h->nranks || h->fds[hello[0]]) {
			pthread_mutex_unlock(&h->mu);
			reply_err(fd, ncclInvalidUsage, "%s", "rank out of range, taken, or a different number of ranks");
			close(fd);
			continue;
		}
		h->fds[hello[0]] = fd;
		h->joined++;
		handler_arg *a = malloc(sizeof *a);
		a->h = h; a->rank = (int)hello[0];
		pthread_t th;
		pthread_create(&th, NULL, handler_main, a);
		pthread_detach(th);
		int done = h->joined == h->nranks;
		pthread_cond_broadcast(&h->cv);
		pthread_mutex_unlock(&h->mu);
		if (done) break;
	}
	close(h->lfd);
	return NULL;
}

// ---- the NCCL API -------------------------------------------------------

int ncclGetVersion(int *v) { *v = 21800; return ncclSuccess; }

const char *ncclGetErrorString(int r) {
	switch (r) {
	case ncclSuccess: return "no error";
	case 1: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

const char *ncclGetLastError(ncclComm *c) { return c ? c->last : ""; }

int ncclGetUniqueId(ncclUniqueId *id) {
	hub *h = calloc(1, sizeof *h);
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {0};
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof sa;
	if (h->lfd < 0 || bind(h->lfd, (void *)&sa, sizeof sa) || listen(h->lfd, 64) || getsockname(h->lfd, (void *)&sa, &sl))
		return ncclSystemError;
	memset(id, 0, sizeof *id);
	snprintf(id->internal, sizeof id->internal, "%s 127.0.0.1 %d", ID_MAGIC, ntohs(sa.sin_port));
	pthread_t th;
	pthread_create(&th, NULL, accept_main, h);
	pthread_detach(th);
	return ncclSuccess;
}

static int parse_inject(const char *env, int rank) {
	const char *v = getenv(env);
	int r, k;
	if (v && sscanf(v, "%d:%d", &r, &k) == 2 && r == rank) return k;
	return -1;
}

static void *connect_main(void *arg) {
	ncclComm *c = arg;
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in sa = {0};
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)c->port);
	inet_pton(AF_INET, c->host, &sa.sin_addr);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	uint32_t hello[2] = {(uint32_t)c->rank, (uint32_t)c->nranks};
	rephdr rp;
	if (connect(fd, (void *)&sa, sizeof sa) || full_write(fd, hello, sizeof hello) || full_read(fd, &rp, sizeof rp)) {
		snprintf(c->last, sizeof c->last, "standin: rank %d cannot reach the hub at %s:%d: %s", c->rank, c->host, c->port, strerror(errno));
		close(fd);
		c->err = ncclSystemError;
		return NULL;
	}
	if (rp.status) {
		size_t n = rp.len < sizeof c->last - 1 ? rp.len : sizeof c->last - 1;
		full_read(fd, c->last, n);
		close(fd);
		c->err = rp.status;
		return NULL;
	}
	c->fd = fd;
	__sync_synchronize();
	c->err = ncclSuccess;
	return NULL;
}

int ncclCommInitRankConfig(ncclComm **out, int nranks, ncclUniqueId id, int rank, ncclConfig_t *cfg) {
	if (cfg && (cfg->magic != 0xcafebeef || cfg->size < 32)) return ncclInvalidArgument;
	if (nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
	const char *strict = getenv("DISTBENCH_STANDIN_STRICT");
	if (strict && strcmp(strict, "1") == 0) {
		const int U = -2147483647 - 1;
		if (!cfg || cfg->size != sizeof(ncclConfig_t) || cfg->version != 21800 || cfg->blocking != 0 ||
		    cfg->cgaClusterSize != U || cfg->minCTAs != U || cfg->maxCTAs != U || cfg->netName != NULL || cfg->splitShare != U) {
			fprintf(stderr, "standin: DISTBENCH_STANDIN_STRICT: communicator config is not NCCL_CONFIG_INITIALIZER with blocking = 0\n");
			return ncclInvalidUsage;
		}
	}
	ncclComm *c = calloc(1, sizeof *c);
	pthread_mutex_init(&c->mu, NULL);
	c->rank = rank; c->nranks = nranks; c->fd = -1;
	c->failAt = parse_inject("DISTBENCH_STANDIN_FAIL", rank);
	c->hangAt = parse_inject("DISTBENCH_STANDIN_HANG", rank);
	char magic[32];
	if (sscanf(id.internal, "%31s %63s %d", magic, c->host, &c->port) != 3 || strcmp(magic, ID_MAGIC)) {
		free(c);
		return ncclInvalidArgument;
	}
	*out = c;
	c->err = ncclInProgress;
	if (cfg && cfg->blocking == 0) {
		c->nonblocking = 1;
		pthread_t th;
		pthread_create(&th, NULL, connect_main, c);
		pthread_detach(th);
		return ncclInProgress;
	}
	connect_main(c);
	return c->err;
}

int ncclCommInitRank(ncclComm **out, int nranks, ncclUniqueId id, int rank) {
	return ncclCommInitRankConfig(out, nranks, id, rank, NULL);
}

int ncclCommGetAsyncError(ncclComm *c, int *err) { *err = c->err; return ncclSuccess; }
int ncclCommCount(const ncclComm *c, int *n) { *n = c->nranks; return ncclSuccess; }
int ncclCommUserRank(const ncclComm *c, int *r) { *r = c->rank; return ncclSuccess; }
int ncclCommCuDevice(const ncclComm *c, int *d) { (void)c; *d = 0; return ncclSuccess; }

// The communicator's memory is never freed: a stream's task may still hold
// it after an abort, and tests make few communicators.
int ncclCommAbort(ncclComm *c) {
	if (!c) return ncclSuccess;
	c->aborted = 1;
	if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
	return ncclSuccess;
}

int ncclCommDestroy(ncclComm *c) {
	if (!c) return ncclSuccess;
	c->aborted = 1;
	if (c->fd >= 0) {
		reqhdr bye = {K_BYE, 0, 0, 0, 0, 0};
		full_write(c->fd, &bye, sizeof bye);
		shutdown(c->fd, SHUT_RDWR);
		close(c->fd);
		c->fd = -1;
	}
	return ncclSuccess;
}

static void fail(ncclComm *c, int status, const char *what) {
	pthread_mutex_lock(&c->mu);
	if (c->err == ncclSuccess || c->err == ncclInProgress) {
		snprintf(c->last, sizeof c->last, "%s", what);
		c->err = status;
	}
	pthread_mutex_unlock(&c->mu);
}

static void run_task(task *t) {
	ncclComm *c = t->comm;
	if (c->aborted || (c->err != ncclSuccess && c->err != ncclInProgress)) return;
	if (t->hang) {
		while (!c->aborted) usleep(1000);
		return;
	}
	size_t es = dsize(t->dtype), blk = t->count * es, len = 0;
	reqhdr h = {(uint32_t)t->kind, (uint32_t)t->dtype, (uint32_t)t->op, (uint32_t)t->root, t->count, 0};
	char *payload = NULL;
	switch (t->kind) {
	case K_ALLREDUCE: case K_REDUCE: case K_ALLGATHER: len = blk; break;
	case K_BROADCAST: len = t->root == c->rank ? blk : 0; break;
	case K_REDUCESCATTER: len = blk * (size_t)c->nranks; break;
	case K_GROUP:
		h.count = (uint64_t)t->nops;
		for (int i = 0; i < t->nops; i++) len += 16 + (t->ops[i].type == P_SEND ? t->ops[i].bytes : 0);
		payload = malloc(len ? len : 1);
		char *p = payload;
		for (int i = 0; i < t->nops; i++) {
			struct { uint32_t type, peer; uint64_t bytes; } hd = {(uint32_t)t->ops[i].type, (uint32_t)t->ops[i].peer, t->ops[i].bytes};
			memcpy(p, &hd, 16); p += 16;
			if (hd.type == P_SEND) { memcpy(p, t->ops[i].buf, hd.bytes); p += hd.bytes; }
		}
		break;
	}
	h.len = len;
	int bad = full_write(c->fd, &h, sizeof h) || full_write(c->fd, payload ? payload : t->send, len);
	free(payload);
	rephdr rp;
	if (bad || full_read(c->fd, &rp, sizeof rp)) {
		if (!c->aborted) fail(c, ncclRemoteError, "standin: lost the connection to the hub, in the process of the communicator's rank 0 (it exited, or its host failed)");
		return;
	}
	char *data = malloc(rp.len ? rp.len : 1);
	if (full_read(c->fd, data, rp.len)) {
		free(data);
		if (!c->aborted) fail(c, ncclRemoteError, "standin: lost the connection to the hub, in the process of the communicator's rank 0 (it exited, or its host failed)");
		return;
	}
	if (rp.status) {
		char msg[256];
		snprintf(msg, sizeof msg, "standin: %.*s", (int)(rp.len < 200 ? rp.len : 200), data);
		fail(c, rp.status, msg);
	} else if (t->kind == K_GROUP) {
		char *p = data;
		for (int i = 0; i < t->nops; i++) if (t->ops[i].type == P_RECV) { memcpy(t->ops[i].buf, p, t->ops[i].bytes); p += t->ops[i].bytes; }
	} else if (rp.len) {
		memcpy(t->recv, data, rp.len);
	}
	free(data);
}

static __thread int group_depth;
static __thread task *group_task;
static __thread stream *group_stream;

typedef struct { ncclComm *c; stream *s; task *t; } late;

static void *late_main(void *arg) {
	late l = *(late *)arg;
	free(arg);
	usleep(200);
	enqueue(l.s, l.t);
	__sync_synchronize();
	pthread_mutex_lock(&l.c->mu);
	if (l.c->err == ncclInProgress) l.c->err = ncclSuccess;
	pthread_mutex_unlock(&l.c->mu);
	return NULL;
}

static int submit(ncclComm *c, stream *s, task *t) {
	if (!c || !s) { free(t); return ncclInvalidArgument; }
	if (c->err != ncclSuccess) { free(t); return c->err == ncclInProgress ? ncclInvalidUsage : c->err; }
	t->comm = c;
	int k = c->calls++;
	if (k == c->failAt) {
		char what[120];
		snprintf(what, sizeof what, "standin: injected failure on rank %d at call %d (DISTBENCH_STANDIN_FAIL)", c->rank, k);
		fail(c, ncclSystemError, what);
		free(t->ops);
		free(t);
		return ncclSuccess;
	}
	t->hang = k == c->hangAt;
	if (c->nonblocking && (k & 1)) {
		// As a non-blocking NCCL may: every other call returns
		// ncclInProgress and reaches the stream a little later, the
		// communicator's state saying ncclInProgress until then.
		c->err = ncclInProgress;
		late *l = malloc(sizeof *l);
		l->c = c; l->s = s; l->t = t;
		pthread_t th;
		pthread_create(&th, NULL, late_main, l);
		pthread_detach(th);
		return ncclInProgress;
	}
	enqueue(s, t);
	return ncclSuccess;
}

static task *mk(int kind, const void *send, void *recv, size_t count, int dt, int op, int root) {
	task *t = calloc(1, sizeof *t);
	t->kind = kind; t->send = send; t->recv = recv; t->count = count; t->dtype = dt; t->op = op; t->root = root;
	return t;
}

static int checkdt(int dt, int op) { return dsize(dt) && op >= 0 && op <= 4 ? ncclSuccess : ncclInvalidArgument; }

int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, ncclComm *c, stream *st) {
	if (checkdt(dt, op)) return ncclInvalidArgument;
	return submit(c, st, mk(K_ALLREDUCE, s, r, n, dt, op, 0));
}
int ncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, ncclComm *c, stream *st) {
	if (checkdt(dt, op) || root < 0 || (c && root >= c->nranks)) return ncclInvalidArgument;
	return submit(c, st, mk(K_REDUCE, s, r, n, dt, op, root));
}
int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, ncclComm *c, stream *st) {
	if (checkdt(dt, 0) || root < 0 || (c && root >= c->nranks)) return ncclInvalidArgument;
	return submit(c, st, mk(K_BROADCAST, s, r, n, dt, 0, root));
}
int ncclAllGather(const void *s, void *r, size_t n, int dt, ncclComm *c, stream *st) {
	if (checkdt(dt, 0)) return ncclInvalidArgument;
	return submit(c, st, mk(K_ALLGATHER, s, r, n, dt, 0, 0));
}
int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, ncclComm *c, stream *st) {
	if (checkdt(dt, op)) return ncclInvalidArgument;
	return submit(c, st, mk(K_REDUCESCATTER, s, r, n, dt, op, 0));
}

static int p2p_op(int type, void *buf, size_t n, int dt, int peer, ncclComm *c, stream *st) {
	if (checkdt(dt, 0) || !c || peer < 0 || peer >= c->nranks) return ncclInvalidArgument;
	task *t = group_depth ? group_task : mk(K_GROUP, NULL, NULL, 0, 0, 0, 0);
	if (!t) t = group_task = mk(K_GROUP, NULL, NULL, 0, 0, 0, 0);
	if (group_depth) {
		if ((t->comm && t->comm != c) || (group_stream && group_stream != st)) return ncclInvalidUsage; // one comm per group here
		t->comm = c; group_stream = st;
	}
	t->ops = realloc(t->ops, (size_t)(t->nops + 1) * sizeof(p2p));
	t->ops[t->nops++] = (p2p){type, peer, n * dsize(dt), buf};
	return group_depth ? ncclSuccess : submit(c, st, t);
}
int ncclSend(const void *s, size_t n, int dt, int peer, ncclComm *c, stream *st) { return p2p_op(P_SEND, (void *)s, n, dt, peer, c, st); }
int ncclRecv(void *r, size_t n, int dt, int peer, ncclComm *c, stream *st) { return p2p_op(P_RECV, r, n, dt, peer, c, st); }

int ncclGroupStart(void) { group_depth++; return ncclSuccess; }
int ncclGroupEnd(void) {
	if (group_depth == 0) return ncclInvalidUsage;
	if (--group_depth > 0) return ncclSuccess;
	task *t = group_task;
	stream *st = group_stream;
	group_task = NULL; group_stream = NULL;
	if (!t) return ncclSuccess;
	return submit(t->comm, st, t);
}
