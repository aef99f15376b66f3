// Package cuda is the one place distbench loads NVIDIA's CUDA runtime,
// and where it looks for NVIDIA's libraries: it allocates tensors in GPU
// memory for --device cuda, hands the runtime's handle to the nccl
// strategy, and finds NCCL and NVML for the strategy and for telemetry.
//
// # Finding the libraries
//
// [Finder] lists where a [Library] may be, in order: the variable that
// names it (DISTBENCH_CUDART_LIB, DISTBENCH_NCCL_LIB, DISTBENCH_NVML_LIB),
// alone when set; the dynamic loader's own search by soname
// (LD_LIBRARY_PATH, the ldconfig cache); the driver's directories for
// the driver's libraries (/usr/local/nvidia/lib64 and others); CUDA
// toolkits (CUDA_HOME, CUDA_PATH, /usr/local/cuda, /usr/local/cuda-*
// newest first: lib64, lib, targets/*/lib) and a conda environment's lib;
// and the NVIDIA wheels of Python environments (site-packages/nvidia/cu13/lib
// for CUDA 13, nvidia/cuda_runtime/lib and nvidia/nccl/lib), found from
// VIRTUAL_ENV, CONDA_PREFIX, the python on PATH, and last sys.path of
// python3 itself, as torch's own loader walks it. The runtime is loaded
// with the driver's libcuda.so.1 loaded globally first wherever it was
// found, and a runtime too new for the driver (cudaErrorInsufficientDriver)
// is passed over for an older one further down the list.
//
// # Memory
//
// Its memory implements collective.DeviceMemory: copies are cudaMemcpy,
// and the staging buffers the engine asks for are cudaMallocHost's pinned
// memory. Every call sets its device first, on the same OS thread, since
// the runtime's current device belongs to the calling thread. The GPU a
// rank uses ([DeviceFor], [Place]) follows the launcher's local rank
// (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID)
// modulo the GPUs the runtime sees, so that CUDA_VISIBLE_DEVICES and
// several nodes work as torch users expect.
//
// Everything goes through dlopen and small cgo shims, so no CUDA SDK is
// needed to build; built with CGO_ENABLED=0, [Available] says that cgo is
// needed.
//
// Tested against the nccl strategy's stand-in runtime (whose device memory
// is host memory) laid out in fake directory trees, and Debian's
// libcudart11.0 on machines with no GPU; not yet on a GPU (docs/guide/gpu.md).
package cuda
