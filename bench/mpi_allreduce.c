/* mpi_allreduce.c: peers/mpi_allreduce.py in C, for machines without
 * mpi4py and to time Open MPI without Python's per-call overhead: float32
 * sum in place, warm-up, a barrier, then timed iterations each rank times
 * itself; rank 0 gathers them and prints, per size, the median over
 * iterations of the slowest rank's time, in microseconds:
 *   <bytes> <median_us>
 * Build and run (bench/shm-vs-vader.sh does):
 *   gcc -O2 -o /tmp/mpi_allreduce bench/mpi_allreduce.c -L/usr/lib/x86_64-linux-gnu/openmpi/lib -lmpi
 * (with Open MPI's headers installed: mpicc -DHAVE_MPI_H ...)
 *   mpirun --mca btl self,vader -n 2 /tmp/mpi_allreduce 4096 500 50
 * Arguments: bytes iters warmup. */
#ifdef HAVE_MPI_H
#include <mpi.h>
#else
/* Open MPI's ABI, declared here because Debian's openmpi-bin comes without
 * its headers (libopenmpi-dev): handles are addresses of library globals. */
typedef void *MPI_Comm, *MPI_Datatype, *MPI_Op;
extern char ompi_mpi_comm_world[], ompi_mpi_float[], ompi_mpi_double[], ompi_mpi_op_sum[];
#define MPI_COMM_WORLD ((MPI_Comm)ompi_mpi_comm_world)
#define MPI_FLOAT ((MPI_Datatype)ompi_mpi_float)
#define MPI_DOUBLE ((MPI_Datatype)ompi_mpi_double)
#define MPI_SUM ((MPI_Op)ompi_mpi_op_sum)
#define MPI_IN_PLACE ((void *)1)
int MPI_Init(int *, char ***);
int MPI_Finalize(void);
int MPI_Comm_rank(MPI_Comm, int *);
int MPI_Comm_size(MPI_Comm, int *);
int MPI_Allreduce(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
int MPI_Barrier(MPI_Comm);
int MPI_Gather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm);
double MPI_Wtime(void);
#endif
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 4) {
		if (rank == 0) fprintf(stderr, "usage: mpi_allreduce BYTES ITERS WARMUP\n");
		MPI_Finalize();
		return 2;
	}
	long bytes = atol(argv[1]);
	int iters = atoi(argv[2]), warmup = atoi(argv[3]);
	int count = (int)(bytes / 4);
	float *buf = calloc(count > 0 ? count : 1, sizeof(float));
	double *t = malloc(iters * sizeof(double)), *all = malloc((size_t)size * iters * sizeof(double));
	for (int i = 0; i < count; i++) buf[i] = (float)(i % 13 + rank);
	MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	long wrong = 0;
	for (int i = 0; i < count; i++)
		if (buf[i] != (float)(size * (i % 13) + size * (size - 1) / 2)) wrong++;
	for (int i = 0; i < count; i++) buf[i] = 0;
	for (int i = 0; i < warmup; i++) MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < iters; i++) {
		double t0 = MPI_Wtime();
		MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		t[i] = (MPI_Wtime() - t0) * 1e6;
	}
	MPI_Gather(t, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		for (int i = 0; i < iters; i++)
			for (int r = 1; r < size; r++)
				if (all[r * iters + i] > all[i]) all[i] = all[r * iters + i];
		qsort(all, iters, sizeof(double), cmp);
		double med = iters % 2 ? all[iters / 2] : (all[iters / 2 - 1] + all[iters / 2]) / 2;
		printf("%ld %.3f %ld\n", (long)count * 4, med, wrong);
	}
	MPI_Finalize();
	return 0;
}
