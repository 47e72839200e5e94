package bench

import (
	"net/netip"
	"time"
)

// RunResult is what the server saw of one client test: the streams of one
// client (peer address) running the same test at the same size that were
// served at the same time, reported once the last of them ended
// (ServerConfig.Results).
type RunResult struct {
	Client  netip.Addr
	Test    Test
	Size    int
	Latency bool
	// Streams counts the streams, Reverse those on which the server was
	// the active side (bidirectional runs), Failed those that ended in an
	// error.
	Streams, Reverse, Failed int
	// Ops and Bytes sum the streams' Reports; Elapsed is the longest.
	Ops, Bytes uint64
	Elapsed    time.Duration
}

// Gbps is the payload rate over the longest stream's time.
func (r RunResult) Gbps() float64 { return gbps(r.Bytes, r.Elapsed) }

// MsgRate is the operations per second over the longest stream's time.
func (r RunResult) MsgRate() float64 { return rate(r.Ops, r.Elapsed) }

// runKey groups the streams of one client test.
type runKey struct {
	peer    netip.Addr
	test    Test
	size    uint32
	latency bool
}

// runGroup is a client test in progress: live streams and the sums of
// those that ended. There are at most as many as streams served.
type runGroup struct {
	live int
	res  RunResult
}

// joinRun counts a stream of peer that received Setup s into its test's
// group (a no-op without ServerConfig.Results).
func (s *Server) joinRun(peer netip.Addr, st setupMsg) (runKey, bool) {
	if s.cfg.Results == nil {
		return runKey{}, false
	}
	k := runKey{peer: peer, test: st.Test, size: st.Size, latency: st.Latency()}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.runs[k]
	if g == nil {
		g = &runGroup{res: RunResult{Client: peer, Test: st.Test, Size: int(st.Size), Latency: st.Latency()}}
		s.runs[k] = g
	}
	g.live++
	g.res.Streams++
	if st.Reverse() {
		g.res.Reverse++
	}
	return k, true
}

// leaveRun adds an ended stream's Report to its group and reports the
// group once its last stream ended.
func (s *Server) leaveRun(k runKey, rep Report, failed bool) {
	s.mu.Lock()
	g := s.runs[k]
	if g == nil {
		s.mu.Unlock()
		return
	}
	g.live--
	g.res.Ops += rep.Ops
	g.res.Bytes += rep.Bytes
	g.res.Elapsed = max(g.res.Elapsed, rep.Elapsed)
	if failed {
		g.res.Failed++
	}
	done := g.live == 0
	if done {
		delete(s.runs, k)
	}
	res := g.res
	s.mu.Unlock()
	if done {
		s.cfg.Results(res)
	}
}
