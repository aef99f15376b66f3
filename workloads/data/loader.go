package data

import (
	"fmt"
	"math/rand/v2"
)

// Augment is the training-time augmentation of the CIFAR recipes.
type Augment struct {
	// CropPad > 0 pads each side with CropPad zero pixels and crops back to
	// the original size at a random offset, as torchvision's
	// RandomCrop(size, padding=CropPad).
	CropPad int
	// HFlip mirrors half the images left to right, as RandomHorizontalFlip.
	HFlip bool
}

// Loader assembles minibatches from a dataset: float32 NCHW images,
// normalised per channel ((pixel/255 − mean)/std), with int labels, as a
// torch DataLoader over ToTensor and Normalize would.
type Loader struct {
	Data      *Dataset
	BatchSize int
	// Sampler picks this rank's indices per epoch; nil means every sample
	// in order.
	Sampler *DistributedSampler
	Augment Augment
	// Raw skips normalisation, leaving pixels in [0, 1].
	Raw bool
	// DropLast drops a final short batch, as DataLoader's drop_last.
	DropLast bool
	// Seed drives augmentation, with the epoch and batch number, so every
	// batch is reproducible on its own.
	Seed uint64
}

// Validate checks the loader's settings.
func (l *Loader) Validate() error {
	switch {
	case l.Data == nil:
		return fmt.Errorf("data: loader without a dataset")
	case l.BatchSize <= 0:
		return fmt.Errorf("data: batch size %d", l.BatchSize)
	case l.Augment.CropPad < 0:
		return fmt.Errorf("data: crop padding %d", l.Augment.CropPad)
	case len(l.Data.Mean) != l.Data.C || len(l.Data.Std) != l.Data.C:
		return fmt.Errorf("data: %s: normalisation for %d/%d channels, images have %d", l.Data.Name, len(l.Data.Mean), len(l.Data.Std), l.Data.C)
	}
	if l.Sampler != nil {
		if l.Sampler.N != l.Data.N {
			return fmt.Errorf("data: sampler over %d samples, dataset has %d", l.Sampler.N, l.Data.N)
		}
		return l.Sampler.Validate()
	}
	return nil
}

// Batch is one assembled minibatch. Its slices are reused by the next
// call to Next.
type Batch struct {
	X       []float32 // N×C×H×W
	Shape   [4]int    // N, C, H, W
	Labels  []int
	Indices []int // dataset indices of the samples
	Number  int   // batch number within the epoch
}

// Epoch iterates over one epoch's minibatches.
type Epoch struct {
	l     *Loader
	epoch int
	idx   []int
	next  int // number of the next batch
	b     Batch
}

// Epoch starts an epoch; the sampler's shuffle and the augmentation depend
// on its number.
func (l *Loader) Epoch(epoch int) (*Epoch, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	var idx []int
	if l.Sampler != nil {
		idx = l.Sampler.Indices(epoch)
	} else {
		idx = make([]int, l.Data.N)
		for i := range idx {
			idx[i] = i
		}
	}
	return &Epoch{l: l, epoch: epoch, idx: idx}, nil
}

// NumBatches is the number of minibatches the epoch yields.
func (e *Epoch) NumBatches() int {
	n, b := len(e.idx), e.l.BatchSize
	if e.l.DropLast {
		return n / b
	}
	return (n + b - 1) / b
}

// Next assembles the next minibatch, or returns nil at the end of the
// epoch.
func (e *Epoch) Next() *Batch {
	if e.next >= e.NumBatches() {
		return nil
	}
	lo := e.next * e.l.BatchSize
	hi := min(lo+e.l.BatchSize, len(e.idx))
	e.b.Number = e.next
	e.b.Indices = append(e.b.Indices[:0], e.idx[lo:hi]...)
	e.next++
	e.l.fill(&e.b, uint64(e.epoch))
	return &e.b
}

// fill decodes b.Indices into b.X and b.Labels.
func (l *Loader) fill(b *Batch, epoch uint64) {
	d := l.Data
	n, c, h, w := len(b.Indices), d.C, d.H, d.W
	b.Shape = [4]int{n, c, h, w}
	if cap(b.X) < n*c*h*w {
		b.X = make([]float32, n*c*h*w)
	}
	b.X = b.X[:n*c*h*w]
	b.Labels = b.Labels[:0]
	// Per channel, x = pixel·scale + shift.
	scale, shift := make([]float32, c), make([]float32, c)
	for ch := 0; ch < c; ch++ {
		scale[ch], shift[ch] = 1.0/255, 0
		if !l.Raw {
			scale[ch] = 1 / (255 * d.Std[ch])
			shift[ch] = -d.Mean[ch] / d.Std[ch]
		}
	}
	rng := rand.New(rand.NewPCG(l.Seed^0x9e3779b97f4a7c15, epoch<<32|uint64(b.Number)))
	pad := l.Augment.CropPad
	for i, idx := range b.Indices {
		b.Labels = append(b.Labels, int(d.Labels[idx]))
		img := d.Image(idx)
		dy, dx, flip := 0, 0, false
		if pad > 0 {
			dy, dx = rng.IntN(2*pad+1)-pad, rng.IntN(2*pad+1)-pad
		}
		if l.Augment.HFlip {
			flip = rng.IntN(2) == 1
		}
		for ch := 0; ch < c; ch++ {
			src := img[ch*h*w : (ch+1)*h*w]
			dst := b.X[((i*c)+ch)*h*w : ((i*c)+ch+1)*h*w]
			// Output (y, x) shows source (y+dy, x+dx), or a zero pixel
			// from the padding; flipping mirrors the output.
			for y := 0; y < h; y++ {
				sy := y + dy
				for x := 0; x < w; x++ {
					sx := x + dx
					var p uint8
					if sy >= 0 && sy < h && sx >= 0 && sx < w {
						p = src[sy*w+sx]
					}
					ox := x
					if flip {
						ox = w - 1 - x
					}
					dst[y*w+ox] = float32(p)*scale[ch] + shift[ch]
				}
			}
		}
	}
}
