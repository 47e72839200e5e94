package pathmgr

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"
)

// Defaults of Config.
const (
	// DefaultMaxPaths bounds the destinations of one association.
	DefaultMaxPaths = 8
	// DefaultPathMaxRetrans is Path.Max.Retrans (RFC 9260 §16).
	DefaultPathMaxRetrans = 5
	// DefaultHBInterval is HB.interval (RFC 9260 §16).
	DefaultHBInterval = 30 * time.Second
	// DefaultRTO is a path's RTO until SetRTO gives one: RTO.Initial.
	DefaultRTO = time.Second
)

var (
	// ErrTooManyPaths: the association already has Config.MaxPaths.
	ErrTooManyPaths = errors.New("pathmgr: too many destination addresses")
	// ErrBadAddress: an address no peer can own (unspecified, multicast,
	// limited broadcast) or without a port.
	ErrBadAddress = errors.New("pathmgr: unusable destination address")
	// ErrUnconfirmed: an unconfirmed address cannot be the primary path
	// (RFC 9260 §5.4).
	ErrUnconfirmed = errors.New("pathmgr: destination address not confirmed")
)

// Config holds the path management parameters; a zero field takes its
// default.
type Config struct {
	// MaxPaths caps the destinations (default DefaultMaxPaths).
	MaxPaths int
	// PathMaxRetrans is Path.Max.Retrans: errors after which a path is
	// inactive (RFC 9260 §8.2; default DefaultPathMaxRetrans).
	PathMaxRetrans int
	// PFMaxRetrans is PF.Max.Retrans (RFC 7829 §4): errors after which
	// a path is potentially failed. Default 0, the first timeout;
	// negative: no potentially-failed state.
	PFMaxRetrans int
	// HBInterval is HB.interval (RFC 9260 §8.3; default
	// DefaultHBInterval); negative: no HEARTBEATs to idle active paths
	// (unconfirmed, potentially-failed and inactive ones are still probed).
	HBInterval time.Duration
	// Rand, if not nil, returns the uniform random numbers of the
	// heartbeat jitter (tests).
	Rand func() uint64
}

func (c Config) withDefaults() Config {
	if c.MaxPaths <= 0 {
		c.MaxPaths = DefaultMaxPaths
	}
	if c.PathMaxRetrans <= 0 {
		c.PathMaxRetrans = DefaultPathMaxRetrans
	}
	if c.PFMaxRetrans >= c.PathMaxRetrans {
		c.PFMaxRetrans = -1 // the path would be inactive first
	}
	if c.HBInterval == 0 {
		c.HBInterval = DefaultHBInterval
	}
	if c.Rand == nil {
		c.Rand = rand.Uint64
	}
	return c
}

// ID names a path of one Manager: its index, stable for the association.
type ID int

// Info is what the association shows of a path (metrics, notifications).
type Info struct {
	Addr      netip.AddrPort
	State     State
	Confirmed bool
	Primary   bool
	// Errors is the path's error counter (RFC 9260 §8.2).
	Errors int
}

// Change is one state transition of a path.
type Change struct {
	Path     ID
	From, To State
}

// path is one destination transport address.
type path struct {
	addr      netip.AddrPort
	state     State
	confirmed bool
	errors    int
	rto       time.Duration
	// The HEARTBEAT in flight: nonce and the end of its RTO.
	probing bool
	nonce   uint64
	ackBy   time.Time
	// due is when the next HEARTBEAT may go; lastSent the last DATA sent
	// there (a path with recent DATA is not idle, RFC 9260 §8.3).
	due      time.Time
	lastSent time.Time
	// activeAt orders potentially-failed paths (RFC 7829 §4 step 3).
	activeAt time.Time
}

// Manager holds the paths of one association. It is not safe for
// concurrent use: the association serialises its calls.
type Manager struct {
	cfg     Config
	paths   []path
	primary ID
}

// New returns a Manager whose first path is addr, the address the
// handshake ran on: confirmed by the handshake (RFC 9260 §5.4), active and
// primary.
func New(cfg Config, addr netip.AddrPort, now time.Time) (*Manager, error) {
	m := &Manager{cfg: cfg.withDefaults()}
	if !usable(addr) {
		return nil, fmt.Errorf("%w: %v", ErrBadAddress, addr)
	}
	m.paths = append(make([]path, 0, m.cfg.MaxPaths), path{addr: addr, state: Active, confirmed: true,
		rto: DefaultRTO, activeAt: now})
	m.schedule(&m.paths[0], now)
	return m, nil
}

func usable(a netip.AddrPort) bool {
	ip := a.Addr()
	return a.IsValid() && a.Port() != 0 && !ip.IsUnspecified() && !ip.IsMulticast() &&
		ip != netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// Add adds a destination the peer listed (INIT or INIT ACK address
// parameters, RFC 9260 §5.1.2): unconfirmed, probed at once. An address
// already present returns its ID.
func (m *Manager) Add(addr netip.AddrPort, now time.Time) (ID, error) {
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	if id, ok := m.Lookup(addr); ok {
		return id, nil
	}
	if !usable(addr) {
		return 0, fmt.Errorf("%w: %v", ErrBadAddress, addr)
	}
	if len(m.paths) >= m.cfg.MaxPaths {
		return 0, fmt.Errorf("%w: %d", ErrTooManyPaths, m.cfg.MaxPaths)
	}
	m.paths = append(m.paths, path{addr: addr, state: Unconfirmed, rto: DefaultRTO, due: now})
	return ID(len(m.paths) - 1), nil
}

// Len is the number of paths.
func (m *Manager) Len() int { return len(m.paths) }

// Lookup finds the path of a destination address.
func (m *Manager) Lookup(addr netip.AddrPort) (ID, bool) {
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	for i := range m.paths {
		if m.paths[i].addr == addr {
			return ID(i), true
		}
	}
	return 0, false
}

// LookupHost finds the path of a destination IP address, whatever its
// port.
func (m *Manager) LookupHost(ip netip.Addr) (ID, bool) {
	ip = ip.Unmap()
	for i := range m.paths {
		if m.paths[i].addr.Addr() == ip {
			return ID(i), true
		}
	}
	return 0, false
}

// SetPort makes port path id's port: over UDP the peer's encapsulation
// port is kept per destination address and follows the source port of
// its authenticated packets (RFC 6951 §5.4). The path keeps its state.
func (m *Manager) SetPort(id ID, port uint16) {
	p := &m.paths[id]
	p.addr = netip.AddrPortFrom(p.addr.Addr(), port)
}

// Info describes path id.
func (m *Manager) Info(id ID) Info {
	p := &m.paths[id]
	return Info{Addr: p.addr, State: p.state, Confirmed: p.confirmed, Primary: id == m.primary, Errors: p.errors}
}

// Primary is the primary path.
func (m *Manager) Primary() ID { return m.primary }

// SetPrimary makes id the primary path; it must be confirmed (§5.4).
func (m *Manager) SetPrimary(id ID) error {
	if !m.paths[id].confirmed {
		return fmt.Errorf("%w: %v", ErrUnconfirmed, m.paths[id].addr)
	}
	m.primary = id
	return nil
}

// SetRTO records path id's current RTO, which times its HEARTBEATs.
func (m *Manager) SetRTO(id ID, rto time.Duration) { m.paths[id].rto = rto }

// DataPath is the destination of new DATA (RFC 9260 §6.4): the primary
// while it is active, else another active path (fewest errors, then the
// first), else the potentially-failed path with fewest errors, most
// recently active first (RFC 7829 §4 step 3), else the primary.
func (m *Manager) DataPath() ID {
	if m.paths[m.primary].state == Active {
		return m.primary
	}
	return m.alternate(-1)
}

// RetransmitPath is the destination of a retransmission of DATA last
// sent to last: an active path other than last if there is one (RFC 9260
// §6.4 and §6.4.1), else DataPath.
func (m *Manager) RetransmitPath(last ID) ID {
	if m.paths[m.primary].state == Active && m.primary != last {
		return m.primary
	}
	if id := m.alternate(last); m.paths[id].state == Active {
		return id
	}
	return m.DataPath()
}

// alternate picks the best path other than skip (skip -1: none).
func (m *Manager) alternate(skip ID) ID {
	best, bestPF := ID(-1), ID(-1)
	for i := range m.paths {
		id, p := ID(i), &m.paths[i]
		if id == skip {
			continue
		}
		switch p.state {
		case Active:
			if best < 0 || p.errors < m.paths[best].errors {
				best = id
			}
		case PotentiallyFailed:
			if q := bestPF; q < 0 || p.errors < m.paths[q].errors ||
				(p.errors == m.paths[q].errors && p.activeAt.After(m.paths[q].activeAt)) {
				bestPF = id
			}
		}
	}
	switch {
	case best >= 0:
		return best
	case bestPF >= 0:
		return bestPF
	case skip >= 0 && m.paths[skip].state != Unconfirmed:
		return skip
	}
	return m.primary
}

// Sent records DATA sent to id at now: the path is not idle (§8.3).
func (m *Manager) Sent(id ID, now time.Time) { m.paths[id].lastSent = now }

// Timeout reports a T3-rtx expiry for DATA sent to id (RFC 9260 §8.2).
func (m *Manager) Timeout(id ID, now time.Time) Change { return m.apply(id, evTimeout, now) }

// Acked reports a SACK that newly acknowledged DATA last sent to id
// (RFC 9260 §8.2).
func (m *Manager) Acked(id ID, now time.Time) Change {
	if m.paths[id].state == Active && m.paths[id].errors == 0 {
		return Change{Path: id, From: Active, To: Active} // the data path's common case
	}
	return m.apply(id, evAcked, now)
}

// HeartbeatAck reports a HEARTBEAT ACK from id carrying nonce. It is
// ignored (ok false) unless it answers the HEARTBEAT in flight to id:
// only that proves the address is the peer's (RFC 9260 §5.4).
func (m *Manager) HeartbeatAck(id ID, nonce uint64, now time.Time) (c Change, ok bool) {
	p := &m.paths[id]
	if !p.probing || p.nonce != nonce {
		return Change{Path: id, From: p.state, To: p.state}, false
	}
	p.probing = false
	c = m.apply(id, evConfirmed, now)
	m.schedule(p, now)
	return c, true
}

func (m *Manager) apply(id ID, e event, now time.Time) Change {
	p := &m.paths[id]
	from := p.state
	p.state = table[from][e](m, p)
	if p.state == Active && from != Active {
		p.activeAt = now
	}
	if p.state != from && !p.probing {
		m.schedule(p, now) // a PF path is probed per RTO from now on
	}
	return Change{Path: id, From: from, To: p.state}
}

// Due returns a path whose HEARTBEAT should be sent at now (ok false:
// none). The caller sends it, with a fresh random nonce, and calls Probe.
func (m *Manager) Due(now time.Time) (ID, bool) {
	for i := range m.paths {
		p := &m.paths[i]
		if p.probing || now.Before(p.due) {
			continue
		}
		if p.state == Active && p.confirmed && m.cfg.HBInterval > 0 &&
			now.Before(p.lastSent.Add(p.rto+m.cfg.HBInterval)) {
			m.schedule(p, now) // not idle: no HEARTBEAT yet
			continue
		}
		if p.state == Active && m.cfg.HBInterval < 0 {
			continue
		}
		return ID(i), true
	}
	return 0, false
}

// Probe records the HEARTBEAT sent to id at now with nonce.
func (m *Manager) Probe(id ID, nonce uint64, now time.Time) {
	p := &m.paths[id]
	p.probing, p.nonce, p.ackBy = true, nonce, now.Add(p.rto)
}

// Expire counts each HEARTBEAT unanswered for its RTO as an error of its
// path (RFC 9260 §8.3) and appends the resulting changes to dst.
func (m *Manager) Expire(now time.Time, dst []Change) []Change {
	for i := range m.paths {
		p := &m.paths[i]
		if !p.probing || now.Before(p.ackBy) {
			continue
		}
		p.probing = false
		dst = append(dst, m.apply(ID(i), evTimeout, now))
		m.schedule(p, now)
	}
	return dst
}

// Deadline is the earliest time Due or Expire has work for: the
// association's heartbeat timer. Zero: none.
func (m *Manager) Deadline() time.Time {
	var d time.Time
	for i := range m.paths {
		p := &m.paths[i]
		t := p.due
		if p.probing {
			t = p.ackBy
		} else if p.state == Active && m.cfg.HBInterval < 0 {
			continue
		}
		if d.IsZero() || t.Before(d) {
			d = t
		}
	}
	return d
}

// schedule sets when path p's next HEARTBEAT is due: unconfirmed paths
// once per RTO until Path.Max.Retrans probes failed, then once per
// HB.interval (RFC 9260 §5.4 bounds verification probes, so a listed
// third-party address gets little); potentially-failed ones once per RTO
// (RFC 7829 §4 step 4); others after RTO + HB.interval, jittered by
// ±RTO/2 (RFC 9260 §8.3).
func (m *Manager) schedule(p *path, now time.Time) {
	hbi := m.cfg.HBInterval
	if hbi < 0 {
		hbi = DefaultHBInterval
	}
	switch {
	case p.state == Unconfirmed && p.errors <= m.cfg.PathMaxRetrans, p.state == PotentiallyFailed:
		p.due = now.Add(p.rto)
	case p.state == Unconfirmed:
		p.due = now.Add(hbi)
	default:
		jitter := time.Duration(0)
		if p.rto > 0 {
			jitter = time.Duration(m.cfg.Rand()%uint64(p.rto)) - p.rto/2
		}
		p.due = now.Add(p.rto + hbi + jitter)
	}
}
