/* A C caller of libdistbench.so, compiled by capi_test.go against
 * distbench.h: one rank (WORLD_SIZE=1), every status path it can reach
 * alone. Prints "ok" and exits 0, or names what failed and exits 1. */
#include <stdio.h>
#include <string.h>
#include "distbench.h"

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); return 1; } } while (0)

int main(int argc, char **argv) {
	char msg[512];
	CHECK(distbench_version() == DISTBENCH_CAPI_VERSION, "version %d, header %d", distbench_version(), DISTBENCH_CAPI_VERSION);

	distbench_comm bad = 0;
	int rc = distbench_comm_create("DISTBENCH_STRATEGY=rign\n", &bad);
	distbench_last_error(msg, sizeof msg);
	CHECK(rc == DISTBENCH_ERR_INVALID, "unknown strategy: rc %d", rc);
	CHECK(strstr(msg, "unknown strategy \"rign\"") && !strchr(msg, '\n'), "unknown strategy: message %s", msg);

	distbench_comm c = 0;
	rc = distbench_comm_create("RANK=0\nWORLD_SIZE=1\nDISTBENCH_INIT=tcp://127.0.0.1:0\n", &c);
	distbench_last_error(msg, sizeof msg);
	CHECK(rc == DISTBENCH_OK, "create: rc %d: %s", rc, msg);
	int32_t rank = -1, size = -1;
	CHECK(distbench_comm_rank(c, &rank) == DISTBENCH_OK && rank == 0, "rank %d", rank);
	CHECK(distbench_comm_size(c, &size) == DISTBENCH_OK && size == 1, "size %d", size);
	char strategy[16];
	distbench_comm_strategy(c, strategy, sizeof strategy);
	CHECK(strcmp(strategy, "ring") == 0, "strategy %s", strategy);

	float buf[3] = {1, 2, 3};
	distbench_work w = 0;
	rc = distbench_allreduce(c, buf, 3, DISTBENCH_FLOAT32, DISTBENCH_SUM, &w);
	CHECK(rc == DISTBENCH_OK, "allreduce: rc %d", rc);
	double busy = -1;
	rc = distbench_wait(w, -1, &busy);
	CHECK(rc == DISTBENCH_OK && busy >= 0, "wait: rc %d busy %g", rc, busy);
	CHECK(buf[0] == 1 && buf[2] == 3, "allreduce over one rank changed the buffer: %g %g", buf[0], buf[2]);
	CHECK(distbench_wait(w, 0, NULL) == DISTBENCH_ERR_INVALID, "a second wait of one work is not refused");

	rc = distbench_allreduce(c, buf, 3, 99, DISTBENCH_SUM, &w);
	distbench_last_error(msg, sizeof msg);
	CHECK(rc == DISTBENCH_ERR_INVALID && strstr(msg, "dtype 99"), "bad dtype: rc %d: %s", rc, msg);
	rc = distbench_allreduce(c, NULL, 3, DISTBENCH_FLOAT32, DISTBENCH_SUM, &w);
	CHECK(rc == DISTBENCH_ERR_INVALID, "NULL buffer: rc %d", rc);
	CHECK(distbench_last_error(msg, 4) > 3 && strlen(msg) == 3, "last_error does not truncate to fit");
	rc = distbench_allreduce(12345, buf, 3, DISTBENCH_FLOAT32, DISTBENCH_SUM, &w);
	CHECK(rc == DISTBENCH_ERR_INVALID, "unknown communicator: rc %d", rc);

	CHECK(distbench_comm_step(c, 7) == DISTBENCH_OK, "step");
	CHECK(distbench_barrier(c, &w) == DISTBENCH_OK && distbench_wait(w, 60000, NULL) == DISTBENCH_OK, "barrier");
	CHECK(distbench_comm_destroy(c) == DISTBENCH_OK, "destroy");
	rc = distbench_barrier(c, &w);
	CHECK(rc == DISTBENCH_ERR_INVALID, "barrier after destroy: rc %d", rc);
	CHECK(distbench_last_error(NULL, 0) > 0, "no message for the last failure");
	puts("ok");
	return 0;
}
