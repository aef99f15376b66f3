//go:build !cgo

package nccl

import (
	"context"
	"errors"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/internal/cuda"
)

const haveCgo = false

var errNoCgo = errors.New(Name + ": needs cgo")

func load() error { return errNoCgo }

func deviceCount() (int, error) { return 0, errNoCgo }

func newComm(context.Context, collective.Config) (collective.Comm, error) { return nil, errNoCgo }

// Library is the NCCL this process uses: none, without cgo.
func Library() (cuda.Loaded, int, error) { return cuda.Loaded{}, 0, errNoCgo }
