package harness

import (
	"os"
)

// identLen is how many numbers one rank's identity takes in the first
// point's gather: a hostname's length, its first hostMax bytes one per
// number, and the process id.
const (
	hostMax  = 64
	identLen = 1 + hostMax + 1
)

// ident is this process's identity as gathered: rank 0 learns every
// rank's hostname and pid once per launch, riding on the first point's
// gather of times, so that no operation is added to a launch.
func ident() []float64 {
	host, err := os.Hostname()
	if err != nil {
		host = "?"
	}
	host = host[:min(len(host), hostMax)]
	out := make([]float64, identLen)
	out[0] = float64(len(host))
	for i := range len(host) {
		out[1+i] = float64(host[i])
	}
	out[identLen-1] = float64(os.Getpid())
	return out
}

// rankIDs holds every rank's hostname and pid, indexed by rank.
type rankIDs struct {
	hosts []string
	pids  []int
}

// decodeIdents reads each rank's identity from the gathered numbers: per
// holds n ranks' stride numbers, each rank's identity at offset off.
func decodeIdents(per []float64, stride, off, n int) *rankIDs {
	ids := &rankIDs{hosts: make([]string, n), pids: make([]int, n)}
	for r := range n {
		w := per[r*stride+off : r*stride+off+identLen]
		l := min(max(int(w[0]), 0), hostMax)
		b := make([]byte, l)
		for i := range b {
			b[i] = byte(w[1+i])
		}
		ids.hosts[r], ids.pids[r] = string(b), int(w[identLen-1])
	}
	return ids
}
