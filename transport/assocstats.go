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

// ListenerStats are a Listener's counters (Listener.Stats).
type ListenerStats struct {
	// LLP is the lower layer's name (Options.LLP, "" resolved).
	LLP string
	// Live and Finished count the SCTP associations being served and
	// ended; Totals sums the counters of both (SRTT is not summed: see
	// sctpllp.AssocStats.Add).
	Live, Finished uint64
	Totals         sctpllp.AssocStats
	// Associations are the live SCTP associations, ordered by peer.
	Associations []AssocStats
	// Handshake counts the sctp-native listener's stateless handshake and
	// the unauthenticated packets it dropped or answered.
	Handshake sctp.HandshakeStats
	// MPA counts what the mpa listener's admission did.
	MPA MPAStats
}

// Stats returns the listener's counters; those of the other LLPs are zero.
func (l *Listener) Stats() ListenerStats {
	s := ListenerStats{LLP: l.kind}
	l.p.stats(&s)
	return s
}

// assocTable tracks a listener's associations for Stats.
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

// stats fills s's association counters.
func (t *assocTable) stats(s *ListenerStats) {
	live := t.snapshot()
	t.mu.Lock()
	s.Finished, s.Totals = t.n, t.finished
	t.mu.Unlock()
	s.Live = uint64(len(live))
	s.Associations = make([]AssocStats, len(live))
	for i, a := range live {
		st := a.Stats()
		s.Totals.Add(st)
		tr := a.Transport()
		s.Associations[i] = AssocStats{LLP: tr.Kind(), AssocStats: st}
		if ra := tr.RemoteAddr(); ra != nil {
			s.Associations[i].Peer = ra.String()
		}
	}
	slices.SortFunc(s.Associations, func(a, b AssocStats) int { return strings.Compare(a.Peer, b.Peer) })
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
