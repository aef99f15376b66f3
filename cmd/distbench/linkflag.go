package main

import (
	"strings"

	"github.com/distbench/distbench/internal/linkspec"
)

// transportUsage is --transport's help.
const transportUsage = "what carries the messages of ranks on one host: tcp (loopback TCP, every pair), " +
	"auto (shared memory within a host, TCP across), or shm (shared memory; an error if a pair cannot use it). " +
	"--link shapes TCP pairs only: to shape ranks on one host, keep tcp"

// linkUsage is --link's help in the commands that run one launch.
const linkUsage = "shape the ranks' NICs, repeatable: a default for every rank (10Gbit,25us, or a preset: 1g, 10g, 25g, 100g, lan, wan) " +
	"and per-rank overrides (rank3=1Gbit), e.g. --link 10Gbit,25us --link rank3=1Gbit"

// linkValue is a repeatable --link of a command that runs one launch: the
// values given so far, joined by linkspec.JoinLinks into the spec text
// *dst, so that a bad or conflicting value fails while flags are parsed.
type linkValue struct {
	dst    *string
	values []string
}

func newLinkValue(dst *string) *linkValue { return &linkValue{dst: dst} }

func (v *linkValue) Set(s string) error {
	joined, err := linkspec.JoinLinks(append(v.values, s))
	if err != nil {
		return err
	}
	v.values = append(v.values, s)
	*v.dst = joined
	return nil
}

func (v *linkValue) String() string { return strings.Join(v.values, " ") }

func (v *linkValue) Type() string { return "link" }
