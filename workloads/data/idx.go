package data

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxIDXBytes bounds the payload an IDX header may announce; it is checked
// before anything is allocated. The largest real file, MNIST's training
// images, is 47 MB.
var MaxIDXBytes = 1 << 30

// IDX is a decoded IDX file (LeCun's MNIST format) of unsigned bytes.
type IDX struct {
	Dims []int
	Data []uint8
}

// ReadIDX decodes an IDX file of unsigned bytes (type 0x08), gzipped or
// raw: gzip is recognised by its magic number, so callers need not know.
func ReadIDX(r io.Reader) (*IDX, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("idx: %w", err)
		}
		defer zr.Close()
		return readIDX(zr)
	}
	return readIDX(br)
}

func readIDX(r io.Reader) (*IDX, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("idx: header: %w", noEOF(err))
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return nil, fmt.Errorf("idx: bad magic %#x %#x, not an IDX file", hdr[0], hdr[1])
	}
	if hdr[2] != 0x08 {
		return nil, fmt.Errorf("idx: element type %#x not supported (only 0x08, unsigned byte)", hdr[2])
	}
	nd := int(hdr[3])
	if nd == 0 || nd > 8 {
		return nil, fmt.Errorf("idx: %d dimensions", nd)
	}
	dims := make([]int, nd)
	total := 1
	for i := range dims {
		var d uint32
		if err := binary.Read(r, binary.BigEndian, &d); err != nil {
			return nil, fmt.Errorf("idx: dimension %d: %w", i, noEOF(err))
		}
		dims[i] = int(d)
		if dims[i] > 0 && total > MaxIDXBytes/dims[i] {
			return nil, fmt.Errorf("idx: dimensions %v exceed the %d-byte limit", dims[:i+1], MaxIDXBytes)
		}
		total *= dims[i]
	}
	data := make([]uint8, total)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("idx: payload of %v: %w", dims, noEOF(err))
	}
	return &IDX{Dims: dims, Data: data}, nil
}

// ReadIDXFile reads an IDX file, gzipped or raw.
func ReadIDXFile(path string) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	x, err := ReadIDX(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return x, nil
}

// WriteIDX encodes unsigned bytes as a raw IDX file, as the tests and
// anyone preparing a sample need.
func WriteIDX(w io.Writer, dims []int, data []uint8) error {
	n := 1
	for _, d := range dims {
		n *= d
	}
	if n != len(data) || len(dims) == 0 || len(dims) > 255 {
		return fmt.Errorf("idx: %d bytes for dimensions %v", len(data), dims)
	}
	hdr := []byte{0, 0, 0x08, byte(len(dims))}
	for _, d := range dims {
		hdr = binary.BigEndian.AppendUint32(hdr, uint32(d))
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	_, err := w.Write(data)
	return err
}

// noEOF turns a clean EOF inside a structure into ErrUnexpectedEOF: a file
// that ends there is truncated.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
