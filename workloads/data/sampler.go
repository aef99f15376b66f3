package data

import (
	"fmt"
	"math/rand/v2"
)

// DistributedSampler gives each of World ranks its share of a dataset's
// indices per epoch, as torch.utils.data.DistributedSampler:
//
//   - with Shuffle, a permutation seeded by Seed+epoch, the same on every
//     rank (torch seeds its generator the same way; the permutation itself
//     differs from torch's, whose generator we do not reproduce);
//   - without DropLast, the list is padded to TotalSize = ⌈N/World⌉·World by
//     repeating it from the start; with DropLast it is cut to
//     ⌊N/World⌋·World;
//   - rank r takes indices[r : TotalSize : World].
//
// Every rank thus gets NumSamples indices, so ranks run the same number of
// steps and no collective waits on a rank that has finished its epoch.
type DistributedSampler struct {
	N, World, Rank int
	Shuffle        bool
	Seed           uint64
	DropLast       bool
}

// NewDistributedSampler returns a shuffling sampler without drop-last, the
// torch defaults.
func NewDistributedSampler(n, world, rank int, seed uint64) (*DistributedSampler, error) {
	s := &DistributedSampler{N: n, World: world, Rank: rank, Shuffle: true, Seed: seed}
	return s, s.Validate()
}

// Validate checks the sampler's settings.
func (s *DistributedSampler) Validate() error {
	switch {
	case s.World <= 0:
		return fmt.Errorf("data: sampler: world size %d", s.World)
	case s.Rank < 0 || s.Rank >= s.World:
		return fmt.Errorf("data: sampler: rank %d outside [0, %d)", s.Rank, s.World)
	case s.N < 0:
		return fmt.Errorf("data: sampler: %d samples", s.N)
	case s.N == 0 && !s.DropLast:
		return fmt.Errorf("data: sampler: an empty dataset cannot be padded")
	}
	return nil
}

// NumSamples is the number of indices each rank gets per epoch.
func (s *DistributedSampler) NumSamples() int {
	if s.DropLast && s.N%s.World != 0 {
		// torch: ceil((N − World)/World), which is ⌊N/World⌋.
		return s.N / s.World
	}
	return (s.N + s.World - 1) / s.World
}

// TotalSize is NumSamples·World.
func (s *DistributedSampler) TotalSize() int { return s.NumSamples() * s.World }

// Indices returns this rank's indices for an epoch.
func (s *DistributedSampler) Indices(epoch int) []int {
	var idx []int
	if s.Shuffle {
		idx = rand.New(rand.NewPCG(s.Seed+uint64(epoch), 0x5a3b1e)).Perm(s.N)
	} else {
		idx = make([]int, s.N)
		for i := range idx {
			idx[i] = i
		}
	}
	total := s.TotalSize()
	if len(idx) < total {
		for pad := total - len(idx); pad > 0; {
			k := min(pad, len(idx))
			idx = append(idx, idx[:k]...)
			pad -= k
		}
	}
	idx = idx[:total]
	mine := make([]int, 0, s.NumSamples())
	for i := s.Rank; i < total; i += s.World {
		mine = append(mine, idx[i])
	}
	return mine
}
