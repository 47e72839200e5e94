package dplpmtud

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Source says where a path MTU value came from.
type Source uint8

// Sources of path MTU values.
const (
	// SourceConfig is a configured or initial value.
	SourceConfig Source = iota
	// SourceKernel is the kernel's own view (IP_MTU, TCP_MAXSEG,
	// SCTP_STATUS).
	SourceKernel
	// SourceTooBig is an EMSGSIZE from a send, or an ICMP "fragmentation
	// needed" / "packet too big" the kernel reported (RFC 1191, RFC 8201).
	SourceTooBig
	// SourceProbe is a size confirmed by an acknowledged probe (RFC 8899
	// §4.1).
	SourceProbe
	// SourceBlackHole is the fall-back to the base PLPMTU after probes of
	// the current size went unanswered (RFC 8899 §4.3, §5.2).
	SourceBlackHole
)

var sourceNames = [...]string{"config", "kernel", "too-big", "probe", "black-hole"}

// String returns the source's name.
func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return fmt.Sprintf("source(%d)", uint8(s))
}

// Stats is a snapshot of a Path's state and counters.
type Stats struct {
	// PMTU is the current path MTU (IP packet size).
	PMTU int
	// Source is where the current value came from.
	Source Source
	// Changes counts changes of PMTU; Decreases and Increases split them.
	Changes, Decreases, Increases uint64
	// TooBig counts EMSGSIZE / ICMP "fragmentation needed" events seen.
	TooBig uint64
	// ProbesSent, ProbesAcked and ProbesLost count RFC 8899 probes.
	ProbesSent, ProbesAcked, ProbesLost uint64
	// BlackHoles counts fall-backs to the base PLPMTU (RFC 8899 §4.3).
	BlackHoles uint64
	// Resplit counts outgoing packets re-bundled into several packets
	// because they exceeded PMTU.
	Resplit uint64
	// Fragmentable counts packets that had to be sent with DF clear: a
	// single chunk larger than PMTU, already sent before PMTU fell, that
	// SCTP cannot re-fragment (its TSN is fixed).
	Fragmentable uint64
	// LastChange is when PMTU last changed (zero if never).
	LastChange time.Time
}

// Path is the path MTU towards one peer address. It is safe for
// concurrent use; MTU is a single atomic load, cheap enough for every
// segment.
type Path struct {
	mtu atomic.Int64
	min int
	max int

	mu       sync.Mutex
	stats    Stats
	watchers []func(old, mtu int)
}

// NewPath returns a path whose MTU starts at initial and always stays in
// [lo, hi] (hi 0: no upper bound).
func NewPath(initial, lo, hi int) *Path {
	p := &Path{min: lo, max: hi}
	v := p.clamp(initial)
	p.mtu.Store(int64(v))
	p.stats.PMTU = v
	return p
}

func (p *Path) clamp(v int) int {
	if p.max > 0 && v > p.max {
		v = p.max
	}
	return max(v, p.min)
}

// MTU returns the current path MTU.
func (p *Path) MTU() int { return int(p.mtu.Load()) }

// Bounds returns the limits given to NewPath.
func (p *Path) Bounds() (lo, hi int) { return p.min, p.max }

// Set makes mtu (clamped to the bounds) the current path MTU and reports
// whether it changed. Watchers run synchronously, outside the lock.
func (p *Path) Set(mtu int, src Source) bool {
	v := p.clamp(mtu)
	p.mu.Lock()
	old := p.MTU()
	p.stats.Source = src
	if v == old {
		p.mu.Unlock()
		return false
	}
	p.mtu.Store(int64(v))
	p.stats.PMTU = v
	p.stats.Changes++
	if v < old {
		p.stats.Decreases++
	} else {
		p.stats.Increases++
	}
	if src == SourceBlackHole {
		p.stats.BlackHoles++
	}
	p.stats.LastChange = time.Now()
	ws := p.watchers
	p.mu.Unlock()
	for _, w := range ws {
		w(old, v)
	}
	return true
}

// OnChange registers fn to be called with the old and new value after
// every change. fn must not call Set.
func (p *Path) OnChange(fn func(old, mtu int)) {
	p.mu.Lock()
	p.watchers = append(p.watchers[:len(p.watchers):len(p.watchers)], fn)
	p.mu.Unlock()
}

// Stats returns a snapshot of the counters.
func (p *Path) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *Path) count(f func(s *Stats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

// Table holds one Path per peer address of an association (SCTP is
// multi-homed: each destination transport address has its own path MTU,
// RFC 4960 §7.3).
type Table struct {
	mu      sync.Mutex
	paths   map[netip.Addr]*Path
	initial int
	lo, hi  int
}

// NewTable returns a table whose new paths start at initial within [lo, hi].
func NewTable(initial, lo, hi int) *Table {
	return &Table{paths: make(map[netip.Addr]*Path), initial: initial, lo: lo, hi: hi}
}

// Path returns the path to addr, creating it on first use.
func (t *Table) Path(addr netip.Addr) *Path {
	addr = addr.Unmap()
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.paths[addr]
	if !ok {
		p = NewPath(t.initial, t.lo, t.hi)
		t.paths[addr] = p
	}
	return p
}

// Min returns the smallest path MTU over all known paths (0 if none): the
// value to size segments by when any path may carry them.
func (t *Table) Min() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := 0
	for _, p := range t.paths {
		if v := p.MTU(); m == 0 || v < m {
			m = v
		}
	}
	return m
}

// Addrs returns the peer addresses with a path, in no particular order.
func (t *Table) Addrs() []netip.Addr {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]netip.Addr, 0, len(t.paths))
	for a := range t.paths {
		out = append(out, a)
	}
	return out
}
