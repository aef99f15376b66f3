// Package telemetry samples the GPUs of this host through NVML
// (github.com/NVIDIA/go-nvml, which loads libnvidia-ml at run time) while a
// sweep point's timed iterations run: utilisation, memory used, power, SM
// clock, PCIe and NVLink throughput, summarised per GPU into the point's
// record (results.GPUStats).
//
// Where there is no NVIDIA driver, or no GPU, or distbench was built
// without cgo (go-nvml needs it), [Open] returns nil and a reason, and a nil
// *Sampler samples nothing: telemetry is then absent from the records, and
// nothing fails. A quantity one GPU's driver does not support is listed in
// GPUStats.Unsupported rather than failing the rest.
//
// go-nvml is pinned at v0.12.9-0: v0.13's generated header marks functions
// deprecated (CUDA 13), and every cgo build of its package then prints
// pages of compiler warnings; v0.12.9-0 has every call used here.
//
// Tested with go-nvml's pkg/nvml/mock, and against Debian's libnvidia-ml1
// on a machine without a driver; not yet on a GPU.
package telemetry
