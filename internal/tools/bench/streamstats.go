package bench

import (
	"runtime/debug"
	"slices"
	"time"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// StreamStats is one stream's RDMAP counters as the server sees them:
// what the passive side of a one-sided test can count (octets placed by
// the client's Writes, Read Responses sent) as well as its Sends.
type StreamStats struct {
	// LLP is the lower layer ("sctp-pion", "sctp-kernel", "mpa"); Peer
	// the client's transport address; StreamID the SCTP stream (RFC 5043
	// §5.1), 0 over MPA.
	LLP, Peer string
	StreamID  uint16
	// Test is the test the client's Setup asked for; empty before it.
	Test string
	rdmap.Stats
}

// TermCount counts the Terminates of one layer/type/code (RFC 5040 §4.8)
// the server's streams sent and received.
type TermCount struct {
	Code           iwarp.TermCode
	Sent, Received uint64
}

// StreamTotals sum the counters of every stream served.
type StreamTotals struct {
	// Stats is the sum over finished and live streams (its Terminate
	// fields are not used: see Terminates).
	rdmap.Stats
	// Finished counts the streams whose service ended.
	Finished uint64
	// Terminates lists each Terminate code seen, ordered by layer, type
	// and code.
	Terminates []TermCount
}

// finishedStreams accumulates the streams that ended.
type finishedStreams struct {
	n     uint64
	stats rdmap.Stats
	terms map[iwarp.TermCode]*TermCount
}

func newFinishedStreams() finishedStreams {
	return finishedStreams{terms: make(map[iwarp.TermCode]*TermCount)}
}

// add counts st's Terminates into terms.
func addTerms(terms map[iwarp.TermCode]*TermCount, st rdmap.Stats) {
	get := func(c iwarp.TermCode) *TermCount {
		tc := terms[c]
		if tc == nil {
			tc = &TermCount{Code: c}
			terms[c] = tc
		}
		return tc
	}
	if st.HasTerminateSent {
		get(st.TerminateSent).Sent++
	}
	if st.HasTerminateReceived {
		get(st.TerminateReceived).Received++
	}
}

// addStats adds o's counters to s (Terminates are counted apart, by
// addTerms).
func addStats(s *rdmap.Stats, o rdmap.Stats) {
	for i := range s.Sent {
		s.Sent[i] += o.Sent[i]
		s.Received[i] += o.Received[i]
	}
	s.OctetsSent += o.OctetsSent
	s.OctetsPlaced += o.OctetsPlaced
}

// streamEnded moves c from the live streams to the finished totals.
func (s *Server) streamEnded(c *conn) {
	st := c.ep.Stats()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, c.ep)
	f := &s.finished
	f.n++
	addStats(&f.stats, st)
	addTerms(f.terms, st)
	if len(s.live) == 0 {
		s.releaseWhenIdleLocked()
	}
}

// idleRelease is how long a server with no stream waits before it gives
// the memory its streams' buffers used back to the operating system
// (debug.FreeOSMemory): the Go runtime would otherwise keep it for
// minutes, and a server's resident size after a burst of clients (or an
// attack) would not come down.
const idleRelease = 5 * time.Second

// releaseWhenIdleLocked arms the idle release; s.mu is held.
func (s *Server) releaseWhenIdleLocked() {
	if s.idleTimer != nil {
		s.idleTimer.Reset(idleRelease)
		return
	}
	s.idleTimer = time.AfterFunc(idleRelease, func() {
		s.mu.Lock()
		idle := len(s.live) == 0 && len(s.conns) == 0
		s.mu.Unlock()
		if idle {
			debug.FreeOSMemory()
		}
	})
}

// Streams returns the counters of the streams being served.
func (s *Server) Streams() []StreamStats {
	type entry struct {
		ep   *rdmap.Endpoint
		test string
	}
	s.mu.Lock()
	live := make([]entry, 0, len(s.live))
	for ep, c := range s.live {
		live = append(live, entry{ep, c.test})
	}
	s.mu.Unlock()
	out := make([]StreamStats, len(live))
	for i, e := range live {
		// LLPInfo may take the LLP's locks: not under s.mu.
		info := e.ep.LLPInfo()
		out[i] = StreamStats{LLP: info.Kind, Peer: info.RemoteAddr, StreamID: info.StreamID, Test: e.test, Stats: e.ep.Stats()}
	}
	slices.SortFunc(out, func(a, b StreamStats) int {
		if a.Peer != b.Peer {
			if a.Peer < b.Peer {
				return -1
			}
			return 1
		}
		return int(a.StreamID) - int(b.StreamID)
	})
	return out
}

// Totals returns the sums over every stream served so far.
func (s *Server) Totals() StreamTotals {
	s.mu.Lock()
	var t StreamTotals
	f := &s.finished
	t.Finished = f.n
	terms := make(map[iwarp.TermCode]*TermCount, len(f.terms))
	for k, v := range f.terms {
		c := *v
		terms[k] = &c
	}
	t.Stats = f.stats
	for ep := range s.live {
		st := ep.Stats()
		addStats(&t.Stats, st)
		addTerms(terms, st)
	}
	s.mu.Unlock()
	t.TerminateSent, t.HasTerminateSent = iwarp.TermCode{}, false
	t.TerminateReceived, t.HasTerminateReceived = iwarp.TermCode{}, false
	for _, v := range terms {
		t.Terminates = append(t.Terminates, *v)
	}
	slices.SortFunc(t.Terminates, func(a, b TermCount) int {
		return termKey(a.Code) - termKey(b.Code)
	})
	return t
}

func termKey(c iwarp.TermCode) int { return int(c.Layer)<<16 | int(c.EType)<<8 | int(c.Code) }
