package transport

import (
	"slices"
	"strings"
	"sync"

	"github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
)

// AssocStats is one live SCTP association of a Listener and its counters
// (session control, erroneous streams, the SCTP stack's RTT and
// retransmissions).
type AssocStats struct {
	// LLP is "sctp-pion" or "sctp-kernel"; Peer the peer's address.
	LLP, Peer string
	sctpllp.AssocStats
}

// AssocTotals sum the counters of every association a Listener served.
type AssocTotals struct {
	// Live and Finished count the associations being served and ended.
	Live, Finished uint64
	// AssocStats is the sum over live and finished associations (SRTT
	// is not summed: see AssocStats.Add).
	sctpllp.AssocStats
}

// assocTable tracks a listener's associations for Associations and
// AssocTotals.
type assocTable struct {
	mu       sync.Mutex
	live     map[*sctpllp.Association]struct{}
	finished sctpllp.AssocStats
	n        uint64
}

func (t *assocTable) add(a *sctpllp.Association) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live == nil {
		t.live = make(map[*sctpllp.Association]struct{})
	}
	t.live[a] = struct{}{}
}

func (t *assocTable) remove(a *sctpllp.Association) {
	st := a.Stats()
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.live, a)
	t.finished.Add(st)
	t.n++
}

func (t *assocTable) snapshot() []*sctpllp.Association {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*sctpllp.Association, 0, len(t.live))
	for a := range t.live {
		out = append(out, a)
	}
	return out
}

// Associations returns the SCTP associations being served, ordered by
// peer (none for MPA).
func (l *Listener) Associations() []AssocStats {
	live := l.assocs.snapshot()
	out := make([]AssocStats, len(live))
	for i, a := range live {
		t := a.Transport()
		out[i] = AssocStats{LLP: t.Kind(), AssocStats: a.Stats()}
		if ra := t.RemoteAddr(); ra != nil {
			out[i].Peer = ra.String()
		}
	}
	slices.SortFunc(out, func(a, b AssocStats) int { return strings.Compare(a.Peer, b.Peer) })
	return out
}

// AssocTotals returns the sums over every association served so far.
func (l *Listener) AssocTotals() AssocTotals {
	live := l.assocs.snapshot()
	l.assocs.mu.Lock()
	tot := AssocTotals{Finished: l.assocs.n, AssocStats: l.assocs.finished}
	l.assocs.mu.Unlock()
	tot.Live = uint64(len(live))
	for _, a := range live {
		tot.Add(a.Stats())
	}
	return tot
}

// HandshakeStats returns the userspace SCTP listener's counters of its
// stateless handshake and of the unauthenticated packets it dropped or
// answered (zero for the other LLPs).
func (l *Listener) HandshakeStats() sctp.HandshakeStats {
	if l.sctp == nil {
		return sctp.HandshakeStats{}
	}
	return l.sctp.HandshakeStats()
}
