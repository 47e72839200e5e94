package dplpmtud

import (
	"slices"
	"time"
)

// ProberState is the state of the RFC 8899 §5.2 state machine.
type ProberState uint8

// States of RFC 8899 §5.2.
const (
	// StateBase confirms that BASE_PLPMTU works.
	StateBase ProberState = iota
	// StateSearching probes larger sizes.
	StateSearching
	// StateSearchComplete holds the PLPMTU, confirming it now and then
	// and searching again after RaiseInterval.
	StateSearchComplete
	// StateError: not even BASE_PLPMTU is confirmed; PLPMTU stays at
	// the base and packets larger than the path are sent fragmentable
	// (RFC 8899 §5.4).
	StateError
)

var stateNames = [...]string{"base", "searching", "search-complete", "error"}

// String names the state.
func (s ProberState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// Defaults of ProberConfig (RFC 8899 §5.1.1, §5.1.2).
const (
	// DefaultBasePLPMTU is BASE_PLPMTU: 1200 for IPv4 and IPv6 (§5.1.2).
	DefaultBasePLPMTU = 1200
	// DefaultMaxProbes is MAX_PROBES (§5.1.2).
	DefaultMaxProbes = 3
	// DefaultProbeTimeout is PROBE_TIMER at the smallest value RFC 8899
	// §5.1.1 allows (1 s).
	DefaultProbeTimeout = time.Second
	// DefaultConfirmInterval is CONFIRMATION_TIMER. RFC 8899 §5.1.1
	// suggests 600 s for a PL that has no other loss signal; this package
	// also reacts to SCTP retransmissions (SuspectLoss), so a shorter
	// periodic check costs one probe per interval.
	DefaultConfirmInterval = 30 * time.Second
	// DefaultRaiseInterval is PMTU_RAISE_TIMER (§5.1.1: 600 s).
	DefaultRaiseInterval = 600 * time.Second
)

// commonMTUs are the sizes the search tries, in order, between the
// PLPMTU and the maximum (RFC 8899 §5.3.2 allows a table of likely
// values): IPv6 minimum, common tunnels, PPPoE, Ethernet, FDDI, pion's
// largest packet over UDP/IPv4, jumbo.
var commonMTUs = []int{1280, 1400, 1450, 1492, 1500, 2000, 4352, 8220, 9000}

// ProberConfig configures a Prober. Sizes are IP packet sizes. Zero
// fields take the defaults.
type ProberConfig struct {
	// Base is BASE_PLPMTU; Max is MAX_PLPMTU (required: the local
	// interface MTU or what the stack can send).
	Base, Max int
	// MaxProbes is MAX_PROBES.
	MaxProbes int
	// ProbeTimeout is PROBE_TIMER.
	ProbeTimeout time.Duration
	// ConfirmInterval is CONFIRMATION_TIMER.
	ConfirmInterval time.Duration
	// RaiseInterval is PMTU_RAISE_TIMER.
	RaiseInterval time.Duration
	// Candidates replaces commonMTUs.
	Candidates []int
	// MaxFirst probes Max before the candidate table, once per search
	// (RFC 8899 §5.3.2 leaves the search order open): where the route's
	// first hop is the narrowest link, as on most paths, the search is
	// complete after two probes (BASE, then Max) instead of one per
	// table entry. That first probe of Max is sent once: when it is lost
	// the table is walked at once (§5.3.1: after a PROBE_TIMER expiry "a
	// new probe of the same size or any other size" may follow), so a
	// peer that takes less than the route (pion reads 8 KiB of a 64 KiB
	// loopback datagram) costs one PROBE_TIMER, not MAX_PROBES of them;
	// Max is probed MAX_PROBES times again once the table is exhausted.
	MaxFirst bool
}

func (c ProberConfig) withDefaults() ProberConfig {
	if c.Base <= 0 {
		c.Base = DefaultBasePLPMTU
	}
	if c.Max < c.Base {
		c.Max = c.Base
	}
	if c.MaxProbes <= 0 {
		c.MaxProbes = DefaultMaxProbes
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	if c.ConfirmInterval <= 0 {
		c.ConfirmInterval = DefaultConfirmInterval
	}
	if c.RaiseInterval <= 0 {
		c.RaiseInterval = DefaultRaiseInterval
	}
	if c.Candidates == nil {
		c.Candidates = commonMTUs
	}
	return c
}

// Prober is the Datagram PLPMTUD state machine of RFC 8899 §5.2 without
// I/O: the caller sends the probes Next asks for, reports their
// acknowledgement (Acked) and what the network says (PacketTooBig,
// SuspectLoss), and calls Next again at Deadline. Time is passed in, so
// tests run it on a fake clock. A Prober is not safe for concurrent use.
type Prober struct {
	// The search walks up the candidate table (probe, wait for the ack or
	// MaxProbes timeouts) and stops at the first size that fails; in
	// SEARCH_COMPLETE it re-confirms the PLPMTU every ConfirmInterval or at
	// once on a loss signal, and falls back to BASE_PLPMTU when MaxProbes
	// confirmations go unanswered (black hole, §4.3). A Packet Too Big with a
	// size between base and PLPMTU lowers the PLPMTU at once (§4.6.2).

	cfg     ProberConfig
	state   ProberState
	plpmtu  int
	ceiling int // sizes above are known not to pass (0: none known)

	probing   int  // size of the outstanding probe, 0 if none
	probeNo   int  // probes sent for that size
	maxTried  bool // MaxFirst: Max was probed in this search
	maxQuick  bool // MaxFirst: the outstanding probe of Max is its single try
	deadline  time.Time
	confirmAt time.Time
	raiseAt   time.Time

	lost uint64
}

// NewProber starts in BASE at now.
func NewProber(cfg ProberConfig, now time.Time) *Prober {
	cfg = cfg.withDefaults()
	return &Prober{cfg: cfg, state: StateBase, plpmtu: cfg.Base, deadline: now}
}

// PLPMTU is the largest size confirmed (or BASE_PLPMTU before any).
func (p *Prober) PLPMTU() int { return p.plpmtu }

// State returns the current state.
func (p *Prober) State() ProberState { return p.state }

// Deadline is when Next must be called again.
func (p *Prober) Deadline() time.Time { return p.deadline }

// Lost counts probes that timed out.
func (p *Prober) Lost() uint64 { return p.lost }

// Probing returns the size of the outstanding probe (0: none).
func (p *Prober) Probing() int { return p.probing }

func (p *Prober) limit() int {
	if p.ceiling > 0 {
		return min(p.cfg.Max, p.ceiling-1)
	}
	return p.cfg.Max
}

// nextCandidate is the first size above the PLPMTU that may pass.
func (p *Prober) nextCandidate() int {
	lim := p.limit()
	if p.cfg.MaxFirst && !p.maxTried && lim == p.cfg.Max && lim > p.plpmtu {
		return lim
	}
	for _, c := range p.cfg.Candidates {
		if c > p.plpmtu && c <= lim {
			return c
		}
	}
	if lim > p.plpmtu && !slices.Contains(p.cfg.Candidates, lim) && lim == p.cfg.Max {
		return lim
	}
	return 0
}

// Next returns the size of a probe to send now (ok false: nothing to send)
// after handling an expired probe, and moves Deadline.
func (p *Prober) Next(now time.Time) (size int, ok bool) {
	if now.Before(p.deadline) {
		return 0, false
	}
	if p.probing != 0 {
		// PROBE_TIMER expired.
		p.lost++
		switch {
		case p.maxQuick && p.probing == p.cfg.Max:
			// MaxFirst's single try: walk the table instead.
			p.maxQuick = false
			p.probing, p.probeNo = 0, 0
		case p.probeNo < p.cfg.MaxProbes:
			return p.send(p.probing, now)
		default:
			p.failed(now)
		}
	}
	switch p.state {
	case StateBase, StateError:
		return p.send(p.cfg.Base, now)
	case StateSearching:
		if c := p.nextCandidate(); c != 0 {
			return p.send(c, now)
		}
		p.complete(now)
		return 0, false
	default: // SEARCH_COMPLETE
		if !now.Before(p.confirmAt) {
			return p.send(p.plpmtu, now)
		}
		if !now.Before(p.raiseAt) {
			p.ceiling = 0
			p.maxTried = false
			p.state = StateSearching
			return p.Next(now)
		}
		p.deadline = minTime(p.confirmAt, p.raiseAt)
		return 0, false
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func (p *Prober) send(size int, now time.Time) (int, bool) {
	if p.probing != size {
		p.maxQuick = false
		if p.state == StateSearching && size == p.cfg.Max {
			p.maxQuick = p.cfg.MaxFirst && !p.maxTried
			p.maxTried = true
		}
		p.probing, p.probeNo = size, 0
	}
	p.probeNo++
	p.deadline = now.Add(p.cfg.ProbeTimeout)
	return size, true
}

// failed handles MAX_PROBES unanswered probes of p.probing.
func (p *Prober) failed(now time.Time) {
	size := p.probing
	p.probing, p.probeNo = 0, 0
	switch {
	case p.state == StateBase || p.state == StateError:
		p.state = StateError
		p.plpmtu = p.cfg.Base
	case size <= p.plpmtu:
		// Confirmation of the current PLPMTU failed: black hole (§4.3).
		p.ceiling = size
		p.plpmtu = p.cfg.Base
		p.state = StateBase
		p.maxTried = false
	default:
		p.ceiling = size
		if p.nextCandidate() == 0 {
			p.complete(now)
		}
	}
	p.deadline = now
}

func (p *Prober) complete(now time.Time) {
	p.state = StateSearchComplete
	p.confirmAt = now.Add(p.cfg.ConfirmInterval)
	p.raiseAt = now.Add(p.cfg.RaiseInterval)
	p.deadline = minTime(p.confirmAt, p.raiseAt)
}

// Acked handles the acknowledgement of a probe of size octets. It reports
// whether the PLPMTU changed.
func (p *Prober) Acked(size int, now time.Time) bool {
	if size != p.probing {
		return false // a late ack of an older probe
	}
	p.probing, p.probeNo = 0, 0
	old := p.plpmtu
	switch p.state {
	case StateBase, StateError:
		p.plpmtu = max(size, p.plpmtu)
		p.state = StateSearching
	case StateSearching:
		p.plpmtu = max(size, p.plpmtu)
	default:
		if size >= p.plpmtu {
			p.plpmtu = size
		}
		p.confirmAt = now.Add(p.cfg.ConfirmInterval)
	}
	if p.ceiling > 0 && p.ceiling <= p.plpmtu {
		p.ceiling = 0
	}
	p.deadline = now
	if p.state == StateSearching && p.nextCandidate() == 0 {
		// Nothing left to probe: SEARCH_COMPLETE now, not at the next
		// Next, so that whoever sees the PLPMTU also sees the state.
		p.complete(now)
		p.deadline = now
	}
	return p.plpmtu != old
}

// PacketTooBig handles a Packet Too Big / fragmentation needed report of
// mtu (or an EMSGSIZE with the kernel's new IP_MTU), RFC 8899 §4.6.2: a
// value below the PLPMTU (and not below the base) lowers it at once and
// caps the search; an outstanding larger probe is failed. It reports
// whether the PLPMTU changed.
func (p *Prober) PacketTooBig(mtu int, now time.Time) bool {
	if mtu <= 0 || mtu >= p.limit()+1 && mtu > p.plpmtu {
		return false
	}
	old := p.plpmtu
	p.ceiling = mtu + 1
	if p.probing > mtu {
		p.probing, p.probeNo = 0, 0
	}
	if mtu < p.plpmtu {
		p.plpmtu = max(mtu, p.cfg.Base)
		if mtu < p.cfg.Base {
			p.state = StateError
		} else {
			p.state = StateSearchComplete
			p.confirmAt = now.Add(p.cfg.ConfirmInterval)
			p.raiseAt = now.Add(p.cfg.RaiseInterval)
		}
	}
	p.deadline = now
	return p.plpmtu != old
}

// SuspectLoss tells the prober that packets of the PLPMTU size may be
// lost (an SCTP retransmission): in SEARCH_COMPLETE the PLPMTU is
// confirmed at once.
func (p *Prober) SuspectLoss(now time.Time) {
	if p.state == StateSearchComplete && p.probing == 0 && now.Before(p.confirmAt) {
		p.confirmAt = now
		p.deadline = now
	}
}
