package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestIDXRoundTrip(t *testing.T) {
	dims := []int{3, 2, 4}
	payload := make([]uint8, 24)
	for i := range payload {
		payload[i] = uint8(i * 7)
	}
	var raw bytes.Buffer
	if err := WriteIDX(&raw, dims, payload); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	z.Write(raw.Bytes())
	z.Close()
	for name, b := range map[string][]byte{"raw": raw.Bytes(), "gzip": gz.Bytes()} {
		x, err := ReadIDX(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(x.Dims, dims) || !bytes.Equal(x.Data, payload) {
			t.Errorf("%s: got %v %v", name, x.Dims, x.Data)
		}
	}
}

func TestIDXErrors(t *testing.T) {
	var good bytes.Buffer
	WriteIDX(&good, []int{2, 3}, make([]uint8, 6))
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "unexpected EOF"},
		{"bad magic", []byte{1, 0, 8, 1, 0, 0, 0, 1, 0}, "bad magic"},
		{"float type", []byte{0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0}, "not supported"},
		{"no dims", []byte{0, 0, 8, 0}, "0 dimensions"},
		{"truncated header", []byte{0, 0, 8, 2, 0, 0}, "unexpected EOF"},
		{"truncated payload", good.Bytes()[:good.Len()-1], "unexpected EOF"},
		{"huge", []byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2}, "limit"},
	}
	for _, tc := range tests {
		_, err := ReadIDX(bytes.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestMNISTSample reads the first 16 images of MNIST's real test set,
// shipped in testdata (2.6 KB gzipped).
func TestMNISTSample(t *testing.T) {
	d, err := Load("mnist", "testdata/mnist-sample", Test)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint8{7, 2, 1, 0, 4, 1, 4, 9, 5, 9, 0, 6, 9, 0, 1, 5}
	if d.N != 16 || !bytes.Equal(d.Labels, want) {
		t.Fatalf("%d samples, labels %v; want 16, %v", d.N, d.Labels, want)
	}
	// Digits are white strokes on black: corners blank, some pixels full.
	for i := 0; i < d.N; i++ {
		img := d.Image(i)
		if img[0] != 0 || img[783] != 0 || slices.Max(img) < 250 {
			t.Errorf("image %d does not look like a digit", i)
		}
	}
	if _, err := Load("mnist", "testdata/mnist-sample", Train); !errors.Is(err, ErrNotFound) {
		t.Errorf("train split: %v, want ErrNotFound", err)
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load("mnist", t.TempDir(), Train)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "make data") {
		t.Errorf("missing data: %v", err)
	}
	_, err = Load("imagenet", "", Train)
	if err == nil || !strings.Contains(err.Error(), "fashion-mnist") {
		t.Errorf("unknown dataset: %v", err)
	}
	if _, err = Load("mnist", "", "validation"); err == nil {
		t.Error("unknown split: no error")
	}
}

// TestRealDatasets loads the full sets when `make data` has fetched them.
func TestRealDatasets(t *testing.T) {
	for _, tc := range []struct {
		name       string
		train, tst int
	}{{"mnist", 60000, 10000}, {"fashion-mnist", 60000, 10000}} {
		dir := filepath.Join("..", "..", DefaultDir(tc.name))
		if _, err := os.Stat(dir); err != nil {
			t.Logf("%s: not fetched (make data); skipped", tc.name)
			continue
		}
		for split, n := range map[Split]int{Train: tc.train, Test: tc.tst} {
			if split == Train && (raceEnabled || testing.Short()) {
				continue
			}
			d, err := Load(tc.name, dir, split)
			if err != nil {
				t.Fatal(err)
			}
			if d.N != n {
				t.Errorf("%s %s: %d samples, want %d", tc.name, split, d.N, n)
			}
			// The normalisation constants are the data's own statistics.
			var s, ss float64
			for _, p := range d.Pixels {
				v := float64(p) / 255
				s += v
				ss += v * v
			}
			m := s / float64(len(d.Pixels))
			sd := math.Sqrt(ss/float64(len(d.Pixels)) - m*m)
			if split == Train && (math.Abs(m-float64(d.Mean[0])) > 1e-3 || math.Abs(sd-float64(d.Std[0])) > 1e-3) {
				t.Errorf("%s: mean %.4f std %.4f, constants %.4f %.4f", tc.name, m, sd, d.Mean[0], d.Std[0])
			}
		}
	}
}

func cifarRecords(n int, seed int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, byte((i+seed)%10))
		for j := 0; j < cifarPixels; j++ {
			b = append(b, byte(i*31+j+seed))
		}
	}
	return b
}

func TestCIFAR10(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "cifar-10-batches-bin")
	os.Mkdir(sub, 0o755)
	for i := 1; i <= 5; i++ {
		os.WriteFile(filepath.Join(sub, fmt.Sprintf("data_batch_%d.bin", i)), cifarRecords(3, i), 0o644)
	}
	os.WriteFile(filepath.Join(sub, "test_batch.bin"), cifarRecords(4, 100), 0o644)

	tr, err := Load("cifar10", dir, Train)
	if err != nil {
		t.Fatal(err)
	}
	if tr.N != 15 || tr.C != 3 || tr.H != 32 {
		t.Fatalf("train: %d samples of %d×%d×%d", tr.N, tr.C, tr.H, tr.W)
	}
	// Sample 4 is record 1 of data_batch_2: label (1+2)%10, pixels 31+j+2.
	if tr.Labels[4] != 3 || tr.Image(4)[0] != 33 || tr.Image(4)[1024] != byte((31+1024+2)%256) {
		t.Errorf("sample 4: label %d, red[0] %d, green[0] %d", tr.Labels[4], tr.Image(4)[0], tr.Image(4)[1024])
	}
	te, err := Load("cifar10", sub, Test)
	if err != nil || te.N != 4 {
		t.Fatalf("test: %v, %d samples", err, te.N)
	}

	// A truncated record and a bad label are errors.
	if _, _, err := ReadCIFAR10(bytes.NewReader(cifarRecords(2, 0)[:cifarRecord+5]), nil, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: %v", err)
	}
	bad := cifarRecords(1, 0)
	bad[0] = 10
	if _, _, err := ReadCIFAR10(bytes.NewReader(bad), nil, nil); err == nil {
		t.Error("label 10: no error")
	}
}

func TestDistributedSampler(t *testing.T) {
	tests := []struct {
		n, world int
		dropLast bool
		each     int
	}{
		{10, 3, false, 4}, // total 12: two padded from the start
		{10, 3, true, 3},
		{9, 3, false, 3},
		{9, 3, true, 3},
		{2, 5, false, 1}, // padding longer than the data repeats it
		{7, 1, false, 7},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("n%d-w%d-drop%v", tc.n, tc.world, tc.dropLast)
		t.Run(name, func(t *testing.T) {
			for _, shuffle := range []bool{false, true} {
				var all []int
				for r := 0; r < tc.world; r++ {
					s := &DistributedSampler{N: tc.n, World: tc.world, Rank: r, Shuffle: shuffle, Seed: 1, DropLast: tc.dropLast}
					if err := s.Validate(); err != nil {
						t.Fatal(err)
					}
					idx := s.Indices(0)
					if len(idx) != tc.each || s.NumSamples() != tc.each {
						t.Fatalf("rank %d: %d indices (NumSamples %d), want %d", r, len(idx), s.NumSamples(), tc.each)
					}
					all = append(all, idx...)
				}
				seen := map[int]int{}
				for _, i := range all {
					seen[i]++
				}
				if !tc.dropLast && len(seen) != tc.n {
					t.Errorf("shuffle=%v: %d distinct indices, want all %d", shuffle, len(seen), tc.n)
				}
				if tc.dropLast && len(all) != len(seen) {
					t.Errorf("shuffle=%v: repeats with drop-last", shuffle)
				}
			}
		})
	}

	// Unshuffled, the layout is torch's exactly: rank r takes r, r+W, …
	// over 0..N−1 followed by 0, 1, … as padding.
	s := &DistributedSampler{N: 10, World: 4, Rank: 2}
	if got := s.Indices(0); !slices.Equal(got, []int{2, 6, 0}) {
		t.Errorf("rank 2 of 4 over 10: %v, want [2 6 0]", got)
	}
	// Every rank draws the same permutation; epochs differ.
	a, _ := NewDistributedSampler(100, 2, 0, 5)
	b, _ := NewDistributedSampler(100, 2, 1, 5)
	if slices.Equal(a.Indices(0), a.Indices(1)) {
		t.Error("epochs 0 and 1 shuffle alike")
	}
	seen := map[int]bool{}
	for _, i := range append(a.Indices(3), b.Indices(3)...) {
		seen[i] = true
	}
	if len(seen) != 100 {
		t.Errorf("ranks overlap: %d distinct of 100", len(seen))
	}
	if _, err := NewDistributedSampler(10, 2, 2, 0); err == nil {
		t.Error("rank 2 of 2: no error")
	}
}

func tinyDataset(n, c, h, w int) *Dataset {
	d := &Dataset{Name: "tiny", N: n, C: c, H: h, W: w, Classes: 10,
		Pixels: make([]uint8, n*c*h*w), Labels: make([]uint8, n)}
	for i := range d.Pixels {
		d.Pixels[i] = uint8(i%251) + 1 // never 0, so padding shows
	}
	for i := range d.Labels {
		d.Labels[i] = uint8(i % 10)
	}
	for ch := 0; ch < c; ch++ {
		d.Mean = append(d.Mean, 0.5)
		d.Std = append(d.Std, 0.25)
	}
	return d
}

func TestLoaderBatches(t *testing.T) {
	d := tinyDataset(10, 2, 3, 4)
	l := &Loader{Data: d, BatchSize: 4}
	ep, err := l.Epoch(0)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for b := ep.Next(); b != nil; b = ep.Next() {
		sizes = append(sizes, b.Shape[0])
		for i, idx := range b.Indices {
			if b.Labels[i] != int(d.Labels[idx]) {
				t.Errorf("label of %d", idx)
			}
			for j, p := range d.Image(idx) {
				want := (float32(p)/255 - 0.5) / 0.25
				if got := b.X[i*24+j]; math.Abs(float64(got-want)) > 1e-5 {
					t.Fatalf("sample %d pixel %d = %v, want %v", idx, j, got, want)
				}
			}
		}
	}
	if !slices.Equal(sizes, []int{4, 4, 2}) {
		t.Errorf("batch sizes %v", sizes)
	}
	l.DropLast = true
	ep, _ = l.Epoch(0)
	if ep.NumBatches() != 2 {
		t.Errorf("drop-last: %d batches", ep.NumBatches())
	}

	// Two ranks split the shuffled epoch: 5 samples each, batches of 4 and 1.
	seen := map[int]bool{}
	for rank := 0; rank < 2; rank++ {
		s, _ := NewDistributedSampler(d.N, 2, rank, 9)
		l := &Loader{Data: d, BatchSize: 4, Sampler: s}
		ep, err := l.Epoch(3)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		for b := ep.Next(); b != nil; b = ep.Next() {
			sizes = append(sizes, b.Shape[0])
			for _, i := range b.Indices {
				seen[i] = true
			}
		}
		if !slices.Equal(sizes, []int{4, 1}) {
			t.Errorf("rank %d: batch sizes %v", rank, sizes)
		}
	}
	if len(seen) != d.N {
		t.Errorf("ranks covered %d of %d samples", len(seen), d.N)
	}
	bad, _ := NewDistributedSampler(d.N+1, 2, 0, 9)
	if _, err := (&Loader{Data: d, BatchSize: 4, Sampler: bad}).Epoch(0); err == nil {
		t.Error("sampler over the wrong size: no error")
	}
}

// TestAugment checks that every augmented image is its source shifted by
// at most CropPad with zero fill, mirrored or not, and that both flips and
// several shifts occur.
func TestAugment(t *testing.T) {
	const h, w, pad = 5, 6, 2
	d := tinyDataset(40, 1, h, w)
	l := &Loader{Data: d, BatchSize: 40, Raw: true, Augment: Augment{CropPad: pad, HFlip: true}, Seed: 3}
	ep, _ := l.Epoch(0)
	b := ep.Next()
	shifts, flips := map[[2]int]bool{}, map[bool]bool{}
	for i, idx := range b.Indices {
		src, got := d.Image(idx), b.X[i*h*w:(i+1)*h*w]
		found := false
		for dy := -pad; dy <= pad && !found; dy++ {
			for dx := -pad; dx <= pad && !found; dx++ {
				for _, flip := range []bool{false, true} {
					ok := true
					for y := 0; y < h && ok; y++ {
						for x := 0; x < w && ok; x++ {
							var p uint8
							if sy, sx := y+dy, x+dx; sy >= 0 && sy < h && sx >= 0 && sx < w {
								p = src[sy*w+sx]
							}
							ox := x
							if flip {
								ox = w - 1 - x
							}
							ok = math.Abs(float64(got[y*w+ox]-float32(p)/255)) < 1e-6
						}
					}
					if ok {
						found = true
						shifts[[2]int{dy, dx}], flips[flip] = true, true
						break
					}
				}
			}
		}
		if !found {
			t.Fatalf("image %d is no shifted or mirrored copy of its source", i)
		}
	}
	if len(shifts) < 5 || len(flips) != 2 {
		t.Errorf("%d distinct shifts, flips %v", len(shifts), flips)
	}
	// The same epoch and seed give the same batch.
	again := append([]float32(nil), b.X...)
	ep2, _ := l.Epoch(0)
	if !slices.Equal(ep2.Next().X, again) {
		t.Error("augmentation not reproducible")
	}
}
