package linkspec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// RankLinks is a job's link shaping: a Link for every rank's NIC, with
// per-rank overrides. Its text form, which job specs and records carry,
// is the default link (any form ParseLink reads, kept as written), then
// each override as rankN=LINK in rank order, all joined by ";":
//
//	10Gbit,25us                  every rank at 10 Gbit/s and 25us (the old form, unchanged)
//	rank3=100Mbit                rank 3 at 100 Mbit/s, the others unshaped
//	10Gbit,25us;rank3=1Gbit      every rank at 10 Gbit/s, rank 3 at 1 Gbit/s (and no latency)
//
// An override replaces the default for that rank's NIC whole; rank3=none
// leaves rank 3 unshaped. Server processes (a parameter server's) are
// shaped by the default.
type RankLinks struct {
	Default Link
	Ranks   map[int]Link // overrides, by rank
	def     string       // the default as written, "" for none
}

func rankLinksSyntax() string {
	return "accepted: LINK, rankN=LINK, or LINK;rankN=LINK;rankM=LINK: one default for every rank " +
		"and per-rank overrides, N a rank from 0; LINK is " + strings.TrimPrefix(linkSyntax(), "accepted: ")
}

// ParseRankLinks parses the text form of a RankLinks (see its doc); ""
// shapes nothing. An error names the part that is wrong and what is
// accepted.
func ParseRankLinks(s string) (RankLinks, error) {
	var rl RankLinks
	if strings.TrimSpace(s) == "" {
		return rl, nil
	}
	hasDefault := false
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			return RankLinks{}, fmt.Errorf("link %q: an empty part between semicolons (%s)", s, rankLinksSyntax())
		}
		key, val, isRank := strings.Cut(part, "=")
		if !isRank {
			if hasDefault {
				return RankLinks{}, fmt.Errorf("link %q: two default links, %q and %q; give one, and others as rankN=LINK (%s)",
					s, rl.def, part, rankLinksSyntax())
			}
			l, err := ParseLink(part)
			if err != nil {
				return RankLinks{}, err
			}
			hasDefault, rl.Default, rl.def = true, l, part
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		num, ok := strings.CutPrefix(strings.ToLower(key), "rank")
		rank, err := strconv.Atoi(num)
		if !ok || err != nil || rank < 0 || num != strconv.Itoa(rank) {
			return RankLinks{}, fmt.Errorf("link %q: %q is not rankN with N a rank from 0 (%s)", s, key, rankLinksSyntax())
		}
		if val == "" {
			return RankLinks{}, fmt.Errorf("link %q: %s= names no link; write %s=none for an unshaped rank (%s)", s, key, key, rankLinksSyntax())
		}
		l, err := ParseLink(val)
		if err != nil {
			return RankLinks{}, fmt.Errorf("link %q: rank %d: %s", s, rank, err)
		}
		if _, dup := rl.Ranks[rank]; dup {
			return RankLinks{}, fmt.Errorf("link %q: rank %d is given twice (%s)", s, rank, rankLinksSyntax())
		}
		if rl.Ranks == nil {
			rl.Ranks = map[int]Link{}
		}
		rl.Ranks[rank] = l
	}
	if len(rl.Ranks) > 0 && rl.Default == (Link{}) {
		rl.def = "" // "none;rank3=1Gbit" is "rank3=1Gbit"
	}
	return rl, nil
}

// For returns the link of rank's NIC: its override, else the default.
func (rl RankLinks) For(rank int) Link {
	if l, ok := rl.Ranks[rank]; ok {
		return l
	}
	return rl.Default
}

// MaxRank is the highest rank an override names, -1 with none.
func (rl RankLinks) MaxRank() int {
	m := -1
	for r := range rl.Ranks {
		m = max(m, r)
	}
	return m
}

// String is the text form ParseRankLinks reads back: the default as
// written, then the overrides in rank order in Link.String's canonical
// form.
func (rl RankLinks) String() string {
	var parts []string
	if rl.def != "" {
		parts = append(parts, rl.def)
	}
	for _, r := range slices.Sorted(maps.Keys(rl.Ranks)) {
		parts = append(parts, "rank"+strconv.Itoa(r)+"="+rl.Ranks[r].String())
	}
	return strings.Join(parts, ";")
}

// JoinLinks turns the values of a repeated --link flag of a command that
// runs one launch (run, train, soak, ab) into the text a job spec carries:
// at most one default and any number of overrides, each value itself any
// form ParseRankLinks reads. --link 10Gbit,25us --link rank3=1Gbit gives
// "10Gbit,25us;rank3=1Gbit". One value without overrides is returned as
// given, so that its points keep the ids of older runs; none gives "".
func JoinLinks(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", nil
	case 1:
		rl, err := ParseRankLinks(values[0])
		if err != nil || len(rl.Ranks) == 0 {
			return values[0], err
		}
		return rl.String(), nil
	}
	for _, v := range values {
		if strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("--link %q: an empty value among several (%s)", values, rankLinksSyntax())
		}
	}
	rl, err := ParseRankLinks(strings.Join(values, ";"))
	if err != nil {
		return "", err
	}
	return rl.String(), nil
}

// ExpandLinks turns a sweep's link list (repeated --link, or a plan's
// links) into the links it measures, one launch each: every value that is
// a default (with or without overrides of its own) is one alternative,
// "" or none meaning unshaped, and every value that is overrides alone
// (rank3=1Gbit) applies to every alternative. --link none --link 10g
// --link rank3=1Gbit measures "rank3=1Gbit" and "10g;rank3=1Gbit".
// Alternatives without overrides are returned trimmed but otherwise as
// given, none as "", duplicates once; no values give [""].
func ExpandLinks(values []string) ([]string, error) {
	var alts []RankLinks
	common := RankLinks{}
	for _, v := range values {
		if t := strings.TrimSpace(v); t == "" || strings.EqualFold(t, "none") {
			alts = append(alts, RankLinks{})
			continue
		}
		rl, err := ParseRankLinks(v)
		if err != nil {
			return nil, err
		}
		if rl.def == "" && rl.Default == (Link{}) && !startsWithDefault(v) {
			for r, l := range rl.Ranks {
				if _, dup := common.Ranks[r]; dup {
					return nil, fmt.Errorf("links: rank %d is given twice (%s)", r, rankLinksSyntax())
				}
				if common.Ranks == nil {
					common.Ranks = map[int]Link{}
				}
				common.Ranks[r] = l
			}
			continue
		}
		alts = append(alts, rl)
	}
	if len(alts) == 0 {
		alts = []RankLinks{{}}
	}
	var out []string
	for _, a := range alts {
		for r, l := range common.Ranks {
			if _, own := a.Ranks[r]; own {
				return nil, fmt.Errorf("links: rank %d is given both in %q and for every link (%s)", r, a.String(), rankLinksSyntax())
			}
			if a.Ranks == nil {
				a.Ranks = map[int]Link{}
			}
			a.Ranks[r] = l
		}
		if len(a.Ranks) > 0 && a.Default == (Link{}) {
			a.def = ""
		}
		s := a.String()
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// startsWithDefault reports whether v's first part is a default link
// rather than an override ("none;rank3=1g" names the default none).
func startsWithDefault(v string) bool {
	first, _, _ := strings.Cut(v, ";")
	return !strings.Contains(first, "=")
}
