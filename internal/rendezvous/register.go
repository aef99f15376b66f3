package rendezvous

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
)

// Registration is built from the Store interface alone (Add as a
// first-come counter, Get as a wait), so that it works the same on every
// backend. Under the job's prefix:
//
//	size/claims, size        the first arrival's record fixes the world size
//	rank/N/claims, rank/N    the first claimant of rank N owns it
//	arrived                  counts ranks that registered cleanly
//	verdict/claims, verdict  the first verdict wins: "ok" from the last
//	                         arrival, the failure a claimant found, or the
//	                         ranks missing when a rank gave up waiting
//
// Every rank waits on the verdict, so a failure found by any one of them
// reaches all of them at once, not at their timeouts.

// member is one rank's registration record.
type member struct {
	Rank     int    `json:"rank"`
	Size     int    `json:"size"`
	Identity string `json:"identity"`
	Host     string `json:"host"`
}

func (m member) party() string { return fmt.Sprintf("rank %d, %s", m.Rank, m.Identity) }

type verdict struct {
	OK           bool                `json:"ok,omitempty"`
	Duplicate    *DuplicateRankError `json:"duplicate,omitempty"`
	SizeMismatch *SizeMismatchError  `json:"size_mismatch,omitempty"`
	Missing      *MissingRanksError  `json:"missing,omitempty"`
}

// DuplicateRankError is two processes claiming one rank.
type DuplicateRankError struct {
	Rank   int    `json:"rank"`
	First  string `json:"first"`  // the identity that claimed it first
	Second string `json:"second"` // the identity that claimed it again
}

func (e *DuplicateRankError) Error() string {
	return fmt.Sprintf("rank %d claimed by %s and %s", e.Rank, e.First, e.Second)
}

// Is makes errors.Is(err, collective.ErrInvalid) true: it is a launch mistake.
func (e *DuplicateRankError) Is(target error) bool { return target == collective.ErrInvalid }

// SizeMismatchError is a process whose world size differs from the first
// arrival's.
type SizeMismatchError struct {
	FirstSize  int    `json:"first_size"`
	First      string `json:"first"` // "rank 0, host-a/pid 10"
	SecondSize int    `json:"second_size"`
	Second     string `json:"second"`
}

func (e *SizeMismatchError) Error() string {
	return fmt.Sprintf("world size %d (%s) differs from world size %d (%s)", e.FirstSize, e.First, e.SecondSize, e.Second)
}

// Is makes errors.Is(err, collective.ErrMismatch) true.
func (e *SizeMismatchError) Is(target error) bool { return target == collective.ErrMismatch }

// MissingRanksError is a Join that timed out waiting for ranks that never
// registered.
type MissingRanksError struct {
	Missing []int         `json:"missing"`
	Size    int           `json:"size"`
	After   time.Duration `json:"after"`
}

func (e *MissingRanksError) Error() string {
	noun := "ranks"
	if len(e.Missing) == 1 {
		noun = "rank"
	}
	return fmt.Sprintf("%s %s never arrived after %v (%d of %d registered)",
		noun, rankList(e.Missing), roundDuration(e.After), e.Size-len(e.Missing), e.Size)
}

// Is makes errors.Is(err, collective.ErrTimeout) true.
func (e *MissingRanksError) Is(target error) bool { return target == collective.ErrTimeout }

// rankList renders sorted ranks compactly: "3, 5, 7-12".
func rankList(ranks []int) string {
	var b strings.Builder
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		switch {
		case j == i:
			b.WriteString(strconv.Itoa(ranks[i]))
		case j == i+1:
			fmt.Fprintf(&b, "%d, %d", ranks[i], ranks[j])
		default:
			fmt.Fprintf(&b, "%d-%d", ranks[i], ranks[j])
		}
		i = j + 1
	}
	return b.String()
}

// roundDuration rounds for people: "30s", not "30.000412s".
func roundDuration(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(10 * time.Millisecond)
}

func keyPrefix(jobID string) string { return "distbench/rendezvous/" + jobID + "/" }

func rankKey(prefix string, rank int) string { return prefix + "rank/" + strconv.Itoa(rank) }

func getMember(ctx context.Context, st driver.Store, key string) (member, error) {
	var m member
	b, err := st.Get(ctx, key)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("registration %s holds %s: %w", key, quoteShort(b), err)
	}
	return m, nil
}

// claim reports whether this process is the first to Add to key.
func claim(ctx context.Context, st driver.Store, key string) (bool, error) {
	n, err := st.Add(ctx, key, 1)
	return n == 1, err
}

func publish(ctx context.Context, st driver.Store, prefix string, v verdict) error {
	first, err := claim(ctx, st, prefix+"verdict/claims")
	if err != nil || !first {
		return err // an earlier verdict stands
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return st.Set(ctx, prefix+"verdict", b)
}

func (s *Session) register(ctx context.Context, start time.Time, me member, prefix string) error {
	st := s.store
	rec, err := json.Marshal(me)
	if err != nil {
		return err
	}

	// World size first, so that a process with the wrong size does not
	// take a rank from one with the right size.
	first, err := claim(ctx, st, prefix+"size/claims")
	if err != nil {
		return err
	}
	if first {
		err = st.Set(ctx, prefix+"size", rec)
	} else {
		var m member
		if m, err = getMember(ctx, st, prefix+"size"); err == nil && m.Size != me.Size {
			e := &SizeMismatchError{FirstSize: m.Size, First: m.party(), SecondSize: me.Size, Second: me.party()}
			publish(ctx, st, prefix, verdict{SizeMismatch: e})
			return e
		}
	}
	if err != nil {
		return err
	}

	key := rankKey(prefix, me.Rank)
	if first, err = claim(ctx, st, key+"/claims"); err != nil {
		return err
	}
	if !first {
		m, err := getMember(ctx, st, key)
		if err != nil {
			return &wrapped{fmt.Sprintf("rank %d was claimed before us, and reading who claimed it failed", me.Rank), err}
		}
		e := &DuplicateRankError{Rank: me.Rank, First: m.Identity, Second: me.Identity}
		publish(ctx, st, prefix, verdict{Duplicate: e})
		return e
	}
	if err := st.Set(ctx, key, rec); err != nil {
		return err
	}

	n, err := st.Add(ctx, prefix+"arrived", 1)
	if err != nil {
		return err
	}
	if n == int64(me.Size) {
		if err := publish(ctx, st, prefix, verdict{OK: true}); err != nil {
			return err
		}
	}

	b, err := st.Get(ctx, prefix+"verdict")
	if err != nil {
		if errors.Is(err, collective.ErrTimeout) {
			// Report the bound the caller set, not the moment the store
			// gave up, which may be a little earlier.
			after := time.Since(start)
			if dl, ok := ctx.Deadline(); ok {
				after = dl.Sub(start)
			}
			return s.missingRanks(prefix, after, err)
		}
		return err
	}
	var v verdict
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("verdict holds %s: %w", quoteShort(b), err)
	}
	switch {
	case v.Duplicate != nil:
		return v.Duplicate
	case v.SizeMismatch != nil:
		return v.SizeMismatch
	case v.Missing != nil:
		return v.Missing
	case !v.OK:
		return fmt.Errorf("verdict holds %s, neither ok nor a failure", quoteShort(b))
	}

	if s.localRank < 0 {
		// Count the lower ranks on this host: the same answer on every rank
		// without another round of coordination, at the cost of rank reads.
		s.localRank = 0
		for r := range me.Rank {
			m, err := getMember(ctx, st, rankKey(prefix, r))
			if err != nil {
				return &wrapped{"counting local ranks", err}
			}
			if m.Host == me.Host {
				s.localRank++
			}
		}
	}
	return nil
}

// missingRanks turns a timed-out wait for the verdict into a list of the
// ranks that never claimed their slot, and publishes it: with this rank
// gone the world cannot complete, so ranks still waiting, or yet to come,
// should fail now with the same list rather than at their own timeouts.
// Add with 0 reads a counter without waiting, which is what lets this work
// on any Store.
func (s *Session) missingRanks(prefix string, after time.Duration, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), min(s.timeout, 5*time.Second))
	defer cancel()
	var missing []int
	for r := range s.size {
		n, err := s.store.Add(ctx, rankKey(prefix, r)+"/claims", 0)
		if err != nil {
			return fmt.Errorf("%w (and listing the ranks that never arrived failed: %s)", cause, strings.TrimPrefix(err.Error(), "rendezvous: "))
		}
		if n == 0 {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return fmt.Errorf("%w (every rank registered, but no verdict came: did the last one die?)", cause)
	}
	e := &MissingRanksError{Missing: missing, Size: s.size, After: after}
	publish(ctx, s.store, prefix, verdict{Missing: e})
	return e
}
