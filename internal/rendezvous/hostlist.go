package rendezvous

import (
	"fmt"
	"strconv"
	"strings"
)

// Slurm's compressed host lists (SLURM_JOB_NODELIST, SLURM_STEP_NODELIST),
// as its hostlist.c and `scontrol show hostnames` read them:
//
//	list   = expr { "," expr }          commas inside brackets do not split
//	expr   = text { "[" ranges "]" text }
//	ranges = range { "," range }
//	range  = digits [ "-" digits ]      the low bound's digits give the width
//
// so "node[01-03,07]" is node01 node02 node03 node07, "n[1-2]-ib[3-4]" is
// the product n1-ib3 n1-ib4 n2-ib3 n2-ib4 (the first bracket varies
// slowest), and "a,b[1-2]" is a b1 b2. Ranges are numeric only: Slurm
// refuses "[a,b]", and so does this.

// maxHosts bounds an expansion, so that "n[0-999999999]" is an error, not
// a gigabyte of names.
const maxHosts = 1 << 16

// ExpandHostlist expands a Slurm host list into its host names, in order.
func ExpandHostlist(s string) ([]string, error) {
	exprs, err := splitHostlist(s)
	if err != nil {
		return nil, err
	}
	var hosts []string
	for _, e := range exprs {
		hs, err := expandHostExpr(e, maxHosts-len(hosts))
		if err != nil {
			return nil, fmt.Errorf("host list %q: %w", s, err)
		}
		hosts = append(hosts, hs...)
	}
	return hosts, nil
}

// FirstHost is the first host of a Slurm host list: where srun starts task 0.
func FirstHost(s string) (string, error) {
	exprs, err := splitHostlist(s)
	if err != nil {
		return "", err
	}
	hs, err := expandHostExpr(exprs[0], 1)
	if err != nil {
		return "", fmt.Errorf("host list %q: %w", s, err)
	}
	return hs[0], nil
}

// splitHostlist splits at the commas outside brackets.
func splitHostlist(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			if depth++; depth > 1 {
				return nil, fmt.Errorf("host list %q: nested brackets", s)
			}
		case ']':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("host list %q: a ] without its [", s)
			}
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("host list %q: a [ without its ]", s)
	}
	out = append(out, s[start:])
	for _, e := range out {
		if strings.TrimSpace(e) == "" {
			return nil, fmt.Errorf("host list %q: an empty host name", s)
		}
	}
	return out, nil
}

// expandHostExpr expands one expression, giving up past limit names (and
// returning the first limit names when limit is 1, for FirstHost).
func expandHostExpr(e string, limit int) ([]string, error) {
	open := strings.IndexByte(e, '[')
	if open < 0 {
		if strings.ContainsAny(e, "] \t") {
			return nil, fmt.Errorf("%q is not a host name", e)
		}
		return []string{e}, nil
	}
	end := strings.IndexByte(e[open:], ']') + open
	nums, err := expandRanges(e[open+1:end], limit)
	if err != nil {
		return nil, err
	}
	rest, err := expandHostExpr(e[end+1:], limit)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nums {
		for _, r := range rest {
			if len(out) == limit {
				if limit == 1 {
					return out, nil
				}
				return nil, fmt.Errorf("more than %d hosts", maxHosts)
			}
			out = append(out, e[:open]+n+r)
		}
	}
	return out, nil
}

// expandRanges expands "01-03,7" to 01 02 03 7.
func expandRanges(s string, limit int) ([]string, error) {
	var out []string
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, errA := parseDigits(lo)
		b, errB := parseDigits(hi)
		switch {
		case errA != nil || errB != nil:
			return nil, fmt.Errorf("[%s]: %q is not a number or a range of numbers (Slurm's brackets hold numbers only)", s, r)
		case b < a:
			return nil, fmt.Errorf("[%s]: the range %q runs backwards", s, r)
		case b-a >= uint64(limit-len(out)) && limit > 1:
			return nil, fmt.Errorf("[%s]: more than %d hosts", s, maxHosts)
		}
		for n := a; n <= b && len(out) < limit+1; n++ {
			out = append(out, fmt.Sprintf("%0*d", len(lo), n))
		}
	}
	return out, nil
}

func parseDigits(s string) (uint64, error) {
	if s == "" || len(s) > 18 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not digits")
	}
	return strconv.ParseUint(s, 10, 64)
}
