// Package cuda allocates tensors in NVIDIA GPU memory for --device cuda. It
// loads the CUDA runtime (libcudart.so, .so.12 or .so.11.0, or what
// DISTBENCH_CUDART_LIB names, as the nccl strategy does) at run time with
// dlopen through small cgo shims, so that no CUDA SDK is needed to build,
// and a machine without a GPU or driver gets one clear error from
// [Available] instead of a failure deep in a sweep.
//
// Its memory implements collective.DeviceMemory: copies are cudaMemcpy,
// and the staging buffers the engine asks for are cudaMallocHost's pinned
// memory. Every call sets its device first, on the same OS thread, since
// the runtime's current device belongs to the calling thread.
//
// Built with CGO_ENABLED=0, [Available] says that cgo is needed.
//
// Tested against the nccl strategy's stand-in runtime (whose device memory
// is host memory) and Debian's libcudart11.0 on machines with no GPU, not
// yet on a GPU.
package cuda

// EnvCUDARTLib names the CUDA runtime to load instead of the system's.
const EnvCUDARTLib = "DISTBENCH_CUDART_LIB"
