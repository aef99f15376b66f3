//go:build !cgo

package nccl

import (
	"context"
	"errors"

	"github.com/distbench/distbench/collective"
)

const haveCgo = false

var errNoCgo = errors.New(Name + ": needs cgo")

func load() error { return errNoCgo }

func deviceCount() (int, error) { return 0, errNoCgo }

func newComm(context.Context, collective.Config) (collective.Comm, error) { return nil, errNoCgo }
