// Package kernels holds the element-wise reductions every strategy and
// transport runs: dst = dst op src over raw bytes of one dtype, as AVX2
// loops where the CPU has them (reduce_amd64.s) and as Go loops elsewhere,
// the Go loops being the reference the vector code is tested against bit
// for bit.
//
// It is internal because only the engine, the strategies and the
// transports reduce; a user reduces through collective.Comm. Transports
// receive a reduction as a [driver.Reduction], which [Reduction] builds, so
// that the implementers' contract does not depend on the API's types.
package kernels
