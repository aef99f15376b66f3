// Package collectivetest is the conformance suite every strategy's tests call,
// in the spirit of nettest.TestConn and fstest.TestFS:
//
//	func TestConformance(t *testing.T) {
//		collectivetest.Run(t, func(t testing.TB, n int) []collective.Comm {
//			... build an n-rank world of this strategy ...
//		})
//	}
//
// It runs every operation, reduction op and dtype at world sizes 1, 2, 3, 4,
// 5, 7 and 8 and counts 0, 1, n−1, n+1, a prime and over a million elements,
// in place and out of place, and checks each result element by element
// against a naive reference. Inputs are small integers chosen so that every
// reduction is exact in every dtype (bfloat16 included), so a single wrong
// element is a bug, not rounding.
//
// [OnDevice] runs the same suite on device tensors: it mirrors every tensor
// the suite passes in device memory from an allocator (internal/cuda's, or
// a [FakeDevice], whose memory only its copies reach) and copies results
// back, so a strategy is checked on device memory as it is on host memory.
//
// For golden schedule tests, [ScheduleWorld] is a transport world that
// delivers messages one synchronous step at a time inside a testing/synctest
// bubble and prints who sent which elements to whom in each step; [Golden]
// compares such output with a file under testdata/, or rewrites it under a
// test's -update flag.
package collectivetest
