package costmodel

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCalibrationFile: what WriteCalibration writes ReadCalibration reads
// back, and ReadCalibration refuses a file of another schema or none.
func TestCalibrationFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, CalibrationFile)
	want := Calibration{Runs: []string{"runs/a"}, Fits: []Fit{{Algo: "ring", Link: "1Gbit,25us", Points: 3}}}
	if err := WriteCalibration(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCalibration(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Schema != CalibrationSchema || len(got.Fits) != 1 || got.Fits[0].Algo != "ring" || got.Runs[0] != "runs/a" {
		t.Errorf("read back %+v, wrote %+v", got, want)
	}
	for name, src := range map[string]string{
		"another schema": `{"schema": 2, "fits": []}`,
		"no schema":      `{"fits": []}`,
		"not JSON":       `ring 1Gbit`,
	} {
		bad := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(bad, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadCalibration(bad); err == nil || !strings.Contains(err.Error(), "schema 1") {
			t.Errorf("%s: error %v, want one naming the schema", name, err)
		}
	}
	if _, err := ReadCalibration(filepath.Join(dir, "none.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}
