package costmodel

import (
	"encoding/json"
	"fmt"
	"os"
)

// CalibrationFile is the calibration's name in a run directory, where
// `distbench model calibrate` writes it by default and `distbench report`
// looks for it.
const CalibrationFile = "calibration.json"

// CalibrationSchema is the version of the calibration file's layout
// (Calibration as JSON); a reader refuses any other.
const CalibrationSchema = 1

// WriteCalibration writes cal to path as indented JSON, with its schema.
// It is the one writer of calibration files.
func WriteCalibration(path string, cal Calibration) error {
	cal.Schema = CalibrationSchema
	b, err := json.MarshalIndent(cal, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadCalibration reads the calibration file at path and checks its
// schema. It is the one reader of calibration files: the CLI's --calibration
// and reports read them through it. A missing file's error wraps
// fs.ErrNotExist.
func ReadCalibration(path string) (*Calibration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Calibration
	if err := json.Unmarshal(b, &c); err != nil || c.Schema != CalibrationSchema {
		return nil, fmt.Errorf("%s: not a calibration file of `distbench model calibrate` (schema %d)", path, CalibrationSchema)
	}
	return &c, nil
}
