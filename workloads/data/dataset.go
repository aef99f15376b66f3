package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dataset is a labelled image set held as bytes, decoded to float32 only
// when a minibatch is assembled.
type Dataset struct {
	Name    string
	Split   Split
	N       int
	C, H, W int
	Pixels  []uint8 // N images, each C×H×W
	Labels  []uint8
	Classes int
	// Mean and Std per channel, on pixels scaled to [0, 1]: the
	// normalisation the dataset's reference recipes use.
	Mean, Std []float32
}

// Image returns sample i's pixels (C×H×W), sharing memory.
func (d *Dataset) Image(i int) []uint8 {
	n := d.C * d.H * d.W
	return d.Pixels[i*n : (i+1)*n]
}

// Len is the number of samples.
func (d *Dataset) Len() int { return d.N }

// Split selects the training or the test set.
type Split string

const (
	Train Split = "train"
	Test  Split = "test"
)

// ErrNotFound is wrapped by Load's error when the files are missing.
var ErrNotFound = errors.New("dataset not found")

// spec describes a dataset Load knows.
type spec struct {
	c, h, w, classes int
	mean, std        []float32
	load             func(dir string, split Split) (pixels, labels []uint8, err error)
}

var specs = map[string]spec{
	// MNIST's statistics are the tutorial's (0.1307, 0.3081).
	"mnist":         {1, 28, 28, 10, []float32{0.1307}, []float32{0.3081}, loadIDXPair},
	"fashion-mnist": {1, 28, 28, 10, []float32{0.2860}, []float32{0.3530}, loadIDXPair},
	// CIFAR-10's per-channel mean and (population) std over the training set.
	"cifar10": {3, 32, 32, 10, []float32{0.4914, 0.4822, 0.4465}, []float32{0.2470, 0.2435, 0.2616}, loadCIFAR10},
}

// Names lists the datasets Load knows.
func Names() []string {
	var n []string
	for k := range specs {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// DefaultDir is where Load looks when dir is empty: ./data/<name>, where
// `make data` (scripts/fetch-data.sh) puts it.
func DefaultDir(name string) string { return filepath.Join("data", name) }

// Load reads split of the named dataset ("mnist", "fashion-mnist",
// "cifar10") from dir, or from DefaultDir(name) when dir is empty. MNIST
// and Fashion-MNIST are the four standard IDX files, gzipped or not
// (train-images-idx3-ubyte.gz, …); CIFAR-10 is the binary version's
// data_batch_1.bin … data_batch_5.bin and test_batch.bin, in dir or in its
// cifar-10-batches-bin folder. Missing files give an error wrapping
// ErrNotFound that says to run `make data`.
func Load(name, dir string, split Split) (*Dataset, error) {
	sp, ok := specs[name]
	if !ok {
		return nil, fmt.Errorf("data: unknown dataset %q (accepted: %s)", name, strings.Join(Names(), ", "))
	}
	if split != Train && split != Test {
		return nil, fmt.Errorf("data: %s: unknown split %q (want %q or %q)", name, split, Train, Test)
	}
	if dir == "" {
		dir = DefaultDir(name)
	}
	pixels, labels, err := sp.load(dir, split)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			hint := "run `make data` to fetch it"
			if name == "cifar10" {
				hint = "CIFAR-10 cannot be fetched here; place the cifar-10-batches-bin files there"
			}
			return nil, fmt.Errorf("data: %s %s set not found in %s: %w (%s)", name, split, dir, ErrNotFound, hint)
		}
		return nil, fmt.Errorf("data: %s: %w", name, err)
	}
	per := sp.c * sp.h * sp.w
	if len(pixels) != len(labels)*per {
		return nil, fmt.Errorf("data: %s %s: %d labels for %d bytes of %d×%d×%d images", name, split, len(labels), len(pixels), sp.c, sp.h, sp.w)
	}
	for i, l := range labels {
		if int(l) >= sp.classes {
			return nil, fmt.Errorf("data: %s %s: label %d of sample %d outside 0..%d", name, split, l, i, sp.classes-1)
		}
	}
	return &Dataset{Name: name, Split: split, N: len(labels), C: sp.c, H: sp.h, W: sp.w,
		Pixels: pixels, Labels: labels, Classes: sp.classes, Mean: sp.mean, Std: sp.std}, nil
}

// IDXFiles are the standard file names of an IDX dataset split, without
// the optional .gz.
func IDXFiles(split Split) (images, labels string) {
	prefix := "train"
	if split == Test {
		prefix = "t10k"
	}
	return prefix + "-images-idx3-ubyte", prefix + "-labels-idx1-ubyte"
}

func loadIDXPair(dir string, split Split) ([]uint8, []uint8, error) {
	imgName, lblName := IDXFiles(split)
	imgs, err := readIDXEither(dir, imgName)
	if err != nil {
		return nil, nil, err
	}
	lbls, err := readIDXEither(dir, lblName)
	if err != nil {
		return nil, nil, err
	}
	if len(imgs.Dims) != 3 || len(lbls.Dims) != 1 || imgs.Dims[0] != lbls.Dims[0] || imgs.Dims[1] != 28 || imgs.Dims[2] != 28 {
		return nil, nil, fmt.Errorf("images %v and labels %v do not match N×28×28 and N", imgs.Dims, lbls.Dims)
	}
	return imgs.Data, lbls.Data, nil
}

// readIDXEither reads dir/name.gz, or dir/name when that is missing.
func readIDXEither(dir, name string) (*IDX, error) {
	p := filepath.Join(dir, name+".gz")
	if _, err := os.Stat(p); err != nil {
		p = filepath.Join(dir, name)
	}
	return ReadIDXFile(p)
}

func loadCIFAR10(dir string, split Split) ([]uint8, []uint8, error) {
	if sub := filepath.Join(dir, "cifar-10-batches-bin"); isDir(sub) {
		dir = sub
	}
	var files []string
	if split == Train {
		for i := 1; i <= 5; i++ {
			files = append(files, filepath.Join(dir, fmt.Sprintf("data_batch_%d.bin", i)))
		}
	} else {
		files = []string{filepath.Join(dir, "test_batch.bin")}
	}
	return readCIFAR10Files(files)
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
