package nn

import "fmt"

// DDP's bucketing defaults: torch.nn.parallel.DistributedDataParallel's
// bucket_cap_mb is 25, and its reducer caps the first bucket at
// dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB, so that the first allreduce
// starts early in backward.
const (
	DefaultBucketCapMiB     = 25
	DefaultFirstBucketBytes = 1 << 20
)

// Bucket is a run of parameters, consecutive in gradient-ready order, whose
// gradients are reduced together.
type Bucket struct {
	Params []*Param // in gradient-ready order
	// Start and End bound the bucket's elements in a net's flat Grad;
	// Contiguous reports that they hold exactly this bucket's gradients.
	Start, End int
	Contiguous bool
	Bytes      int // float32 bytes of gradient
	CapBytes   int // the limit this bucket was filled against
}

// Elems is the number of gradient elements in the bucket.
func (b Bucket) Elems() int { return b.Bytes / 4 }

// AssignBuckets groups parameters, given in gradient-ready order, as
// PyTorch DDP's reducer does once it has seen one backward pass
// (Reducer::rebuild_buckets, compute_bucket_assignment_by_size with
// the real ready order): parameters are added to the open bucket in order
// and the bucket closes as soon as its size reaches its limit, which is
// firstCapBytes for the first bucket and capBytes for every later one. A
// bucket may therefore exceed its limit by its last tensor, and a tensor
// larger than the limit gets a bucket to itself.
//
// (DDP's very first iteration, before the rebuild, uses the registration
// order instead; steady-state training is what we measure.)
// firstCapBytes or capBytes ≤ 0 take DDP's defaults.
func AssignBuckets(ready []*Param, firstCapBytes, capBytes int) []Bucket {
	if firstCapBytes <= 0 {
		firstCapBytes = DefaultFirstBucketBytes
	}
	if capBytes <= 0 {
		capBytes = DefaultBucketCapMiB << 20
	}
	var out []Bucket
	cur := Bucket{CapBytes: firstCapBytes}
	for _, p := range ready {
		cur.Params = append(cur.Params, p)
		cur.Bytes += 4 * p.Numel()
		if cur.Bytes >= cur.CapBytes {
			out = append(out, cur.finish())
			cur = Bucket{CapBytes: capBytes}
		}
	}
	if len(cur.Params) > 0 {
		out = append(out, cur.finish())
	}
	return out
}

func (b Bucket) finish() Bucket {
	b.Start, b.End = -1, -1
	if len(b.Params) == 0 || b.Params[0].Offset < 0 {
		return b
	}
	b.Start, b.End = b.Params[0].Offset, 0
	for _, p := range b.Params {
		b.Start = min(b.Start, p.Offset)
		b.End = max(b.End, p.Offset+p.Numel())
	}
	b.Contiguous = b.End-b.Start == b.Bytes/4
	return b
}

func (b Bucket) String() string {
	return fmt.Sprintf("bucket[%d params, %d bytes, grad[%d:%d]]", len(b.Params), b.Bytes, b.Start, b.End)
}
