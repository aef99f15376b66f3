package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// CIFAR-10's binary format (cifar-10-batches-bin): records of one label
// byte followed by a 32×32 image as 1024 red, 1024 green and 1024 blue bytes
// — already CHW — 10,000 records per file.
const (
	cifarSide   = 32
	cifarPixels = 3 * cifarSide * cifarSide
	cifarRecord = 1 + cifarPixels
)

// CIFAR10Classes are the label names, in label order.
var CIFAR10Classes = []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}

// ReadCIFAR10 appends the records of one CIFAR-10 binary batch file to
// pixels (CHW per image) and labels.
func ReadCIFAR10(r io.Reader, pixels, labels []uint8) ([]uint8, []uint8, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var rec [cifarRecord]byte
	for n := 0; ; n++ {
		if _, err := io.ReadFull(br, rec[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return pixels, labels, nil
			}
			return pixels, labels, fmt.Errorf("cifar10: record %d: %w", n, err)
		}
		if rec[0] > 9 {
			return pixels, labels, fmt.Errorf("cifar10: record %d: label %d outside 0..9", n, rec[0])
		}
		labels = append(labels, rec[0])
		pixels = append(pixels, rec[1:]...)
	}
}

func readCIFAR10Files(paths []string) (pixels, labels []uint8, err error) {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, err
		}
		pixels, labels, err = ReadCIFAR10(f, pixels, labels)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return pixels, labels, nil
}
