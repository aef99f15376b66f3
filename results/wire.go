package results

import "slices"

// The wire fields of a Record say what each rank really moved, to set
// beside busbw, which assumes a ring's traffic: a parameter server's
// servers, a tree's interior ranks and a gather's root move far more than
// the formula says, and their link is what bounds the time.
//
// The busiest figure is the largest of any rank's (or dedicated server's)
// sent and received bytes, each direction apart: links are full duplex, so
// an operation takes at least busiest/rate on a link of that rate, and
// busiest/time is the link rate the operation achieved where it was most
// loaded. For ring allreduce every rank sends and receives 2(n−1)/n × S,
// so busiest/time is busbw; where the two part, busbw's formula is not
// what the algorithm sends.

// SetWire sets r's wire fields from per-rank and per-server bytes per
// operation (servers nil without dedicated servers), and the busiest figure
// from them.
func (r *Record) SetWire(sent, recv, serverSent, serverRecv []float64) {
	r.WireSentBytes, r.WireRecvBytes = sent, recv
	r.WireServerSentBytes, r.WireServerRecvBytes = serverSent, serverRecv
	r.WireBusiestBytes = 0
	for _, v := range [][]float64{sent, recv, serverSent, serverRecv} {
		for _, b := range v {
			r.WireBusiestBytes = max(r.WireBusiestBytes, b)
		}
	}
}

// HasWire reports whether r carries measured wire bytes.
func (r *Record) HasWire() bool { return len(r.WireSentBytes) > 0 }

// WireBusiestSent is the most bytes any rank or dedicated server sent per
// operation, 0 without wire bytes.
func (r *Record) WireBusiestSent() float64 {
	m := 0.0
	for _, v := range [][]float64{r.WireSentBytes, r.WireServerSentBytes} {
		for _, b := range v {
			m = max(m, b)
		}
	}
	return m
}

// RankTrafficShare is the share of all the payload the ranks moved (each
// rank's sent plus received bytes, summed over ranks) that rank moved: 1/n
// where every rank moves as much (a ring), near 1/2 where every byte goes
// through one rank (DataParallel's master: what it sends, the others
// receive); 0 without wire bytes. Dedicated servers' bytes are left out.
func (r *Record) RankTrafficShare(rank int) float64 {
	if rank < 0 || rank >= len(r.WireSentBytes) || len(r.WireRecvBytes) != len(r.WireSentBytes) {
		return 0
	}
	total := 0.0
	for i := range r.WireSentBytes {
		total += r.WireSentBytes[i] + r.WireRecvBytes[i]
	}
	if total <= 0 {
		return 0
	}
	return (r.WireSentBytes[rank] + r.WireRecvBytes[rank]) / total
}

// mergeWire sets m's wire fields to the mean over rounds of each rank's and
// server's bytes: the same schedule moves the same bytes every round, so
// the mean is that figure, and rounds that differ (a partial barrier's
// byte counted in one) are evened out. Rounds whose arrays disagree in
// length (another world size cannot share a point) or lack them leave the
// fields unset rather than averaging unlike things.
func mergeWire(m *Record, rounds []*Record) {
	mean := func(get func(*Record) []float64) ([]float64, bool) {
		n := len(get(rounds[0]))
		out := make([]float64, n)
		for _, r := range rounds {
			v := get(r)
			if len(v) != n {
				return nil, false
			}
			for i, b := range v {
				out[i] += b / float64(len(rounds))
			}
		}
		if n == 0 {
			return nil, true
		}
		return out, true
	}
	sent, ok1 := mean(func(r *Record) []float64 { return r.WireSentBytes })
	recv, ok2 := mean(func(r *Record) []float64 { return r.WireRecvBytes })
	ssent, ok3 := mean(func(r *Record) []float64 { return r.WireServerSentBytes })
	srecv, ok4 := mean(func(r *Record) []float64 { return r.WireServerRecvBytes })
	if !ok1 || !ok2 || !ok3 || !ok4 || len(sent) == 0 {
		m.SetWire(nil, nil, nil, nil)
		return
	}
	m.SetWire(sent, recv, ssent, srecv)
}

// cloneWire gives m its own copies of its wire slices.
func cloneWire(m *Record) {
	m.WireSentBytes, m.WireRecvBytes = slices.Clone(m.WireSentBytes), slices.Clone(m.WireRecvBytes)
	m.WireServerSentBytes, m.WireServerRecvBytes = slices.Clone(m.WireServerSentBytes), slices.Clone(m.WireServerRecvBytes)
}
