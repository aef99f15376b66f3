package nccltests

import (
	"errors"
	"strconv"
	"strings"
)

// Row is one row of nccl-tests' table read as its own fixed-column
// readers read it: by the widths of its printf formats ("%12li  %12li  %8s
// %6s  %6s", then "  %7s  %6s  %6s  %6s" per side).
type Row struct {
	Size, Count        int64
	Type, Redop, Root  string
	Time, AlgBW, BusBW [2]float64 // out-of-place, in-place
	Wrong              [2]string  // a count, or N/A unchecked
}

var columns = []struct{ from, to int }{
	{0, 12}, {14, 26}, {28, 36}, {38, 44}, {46, 52},
	{54, 61}, {63, 69}, {71, 77}, {79, 85},
	{87, 94}, {96, 102}, {104, 110}, {112, 118},
}

// ParseRow reads a table row of both forms; a comment line, or one too
// short, is not a row. An unchecked side's "#wrong" is nccl-tests'
// "    N/A", a character narrower than a count's "  %6g", which shifts the
// columns after it: such a row is read by its fields instead.
func ParseRow(line string) (Row, error) {
	var r Row
	if strings.HasPrefix(line, "#") {
		return r, errors.New("not a row")
	}
	var f []string
	if strings.Contains(line, "N/A") {
		if f = strings.Fields(line); len(f) != len(columns) {
			return r, errors.New("not a row of both forms: " + line)
		}
	} else {
		if len(line) < 118 {
			return r, errors.New("not a row")
		}
		f = make([]string, len(columns))
		for i, c := range columns {
			if c.from > 0 && line[c.from-1] != ' ' {
				return r, errors.New("column " + strconv.Itoa(i) + " starts early: " + line)
			}
			f[i] = strings.TrimSpace(line[c.from:c.to])
		}
	}
	var err error
	if r.Size, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return r, err
	}
	if r.Count, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return r, err
	}
	r.Type, r.Redop, r.Root = f[2], f[3], f[4]
	for side := range 2 {
		for j, dst := range []*float64{&r.Time[side], &r.AlgBW[side], &r.BusBW[side]} {
			if *dst, err = strconv.ParseFloat(f[5+4*side+j], 64); err != nil {
				return r, err
			}
		}
		r.Wrong[side] = f[8+4*side]
	}
	return r, nil
}
