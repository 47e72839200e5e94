package pathmgr

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	t0    = time.Unix(1000, 0)
	addrA = netip.MustParseAddrPort("10.1.0.2:9899")
	addrB = netip.MustParseAddrPort("10.2.0.2:9899")
	addrC = netip.MustParseAddrPort("10.3.0.2:9899")
)

// twoPaths returns a Manager with the handshake path A (primary) and a
// confirmed, active B.
func twoPaths(t *testing.T, cfg Config) (*Manager, ID, ID) {
	t.Helper()
	m, err := New(cfg, addrA, t0)
	require.NoError(t, err)
	b, err := m.Add(addrB, t0)
	require.NoError(t, err)
	confirmPath(t, m, b, t0)
	return m, 0, b
}

func confirmPath(t *testing.T, m *Manager, id ID, now time.Time) {
	t.Helper()
	m.Probe(id, 42, now)
	_, ok := m.HeartbeatAck(id, 42, now)
	require.True(t, ok)
	require.Equal(t, Active, m.Info(id).State)
}

func TestNewRejectsBadAddress(t *testing.T) {
	for _, a := range []string{"0.0.0.0:1", "224.0.0.1:1", "255.255.255.255:1", "10.0.0.1:0", "[::]:5"} {
		_, err := New(Config{}, netip.MustParseAddrPort(a), t0)
		assert.ErrorIs(t, err, ErrBadAddress, a)
	}
	m, err := New(Config{}, addrA, t0)
	require.NoError(t, err)
	_, err = m.Add(netip.MustParseAddrPort("239.1.1.1:9899"), t0)
	assert.ErrorIs(t, err, ErrBadAddress)
	assert.Equal(t, 1, m.Len())
}

// TestRFC9260_5_4_AddressCap: the peer cannot make the association hold
// more destinations than MaxPaths; a listed duplicate (also as an
// IPv4-mapped IPv6 address) is the same path.
func TestRFC9260_5_4_AddressCap(t *testing.T) {
	m, err := New(Config{MaxPaths: 3}, addrA, t0)
	require.NoError(t, err)
	b, err := m.Add(addrB, t0)
	require.NoError(t, err)
	again, err := m.Add(netip.MustParseAddrPort("[::ffff:10.2.0.2]:9899"), t0)
	require.NoError(t, err)
	assert.Equal(t, b, again)
	_, err = m.Add(addrC, t0)
	require.NoError(t, err)
	_, err = m.Add(netip.MustParseAddrPort("10.4.0.2:9899"), t0)
	assert.ErrorIs(t, err, ErrTooManyPaths)
	assert.Equal(t, 3, m.Len())
}

// TestRFC9260_5_4_UnconfirmedGetsNoData: an address the peer lists gets
// neither new DATA nor retransmissions before it answered a HEARTBEAT with
// its nonce, even when every confirmed path has failed; a HEARTBEAT ACK
// with another nonce confirms nothing; it cannot be made primary.
func TestRFC9260_5_4_UnconfirmedGetsNoData(t *testing.T) {
	m, err := New(Config{PathMaxRetrans: 2}, addrA, t0)
	require.NoError(t, err)
	b, err := m.Add(addrB, t0)
	require.NoError(t, err)
	assert.Equal(t, Unconfirmed, m.Info(b).State)
	assert.ErrorIs(t, m.SetPrimary(b), ErrUnconfirmed)

	for range 3 {
		m.Timeout(0, t0)
	}
	require.Equal(t, Inactive, m.Info(0).State)
	assert.Equal(t, ID(0), m.DataPath())
	assert.Equal(t, ID(0), m.RetransmitPath(0))

	m.Probe(b, 7, t0)
	_, ok := m.HeartbeatAck(b, 8, t0)
	assert.False(t, ok, "a wrong nonce")
	assert.Equal(t, Unconfirmed, m.Info(b).State)
	assert.Equal(t, ID(0), m.DataPath())

	_, ok = m.HeartbeatAck(b, 7, t0)
	require.True(t, ok)
	assert.Equal(t, Info{Addr: addrB, State: Active, Confirmed: true}, m.Info(b))
	assert.Equal(t, b, m.DataPath(), "the confirmed path takes over from the inactive primary")
	_, ok = m.HeartbeatAck(b, 7, t0)
	assert.False(t, ok, "a replayed HEARTBEAT ACK")
	require.NoError(t, m.SetPrimary(b))
}

// TestRFC9260_5_4_VerificationProbesBounded: a listed address that never
// answers (a third party's) is probed once per RTO until Path.Max.Retrans
// probes went unanswered, then once per HB.interval: over an hour it gets
// PathMaxRetrans+1 fast probes and one per HB.interval after.
func TestRFC9260_5_4_VerificationProbesBounded(t *testing.T) {
	cfg := Config{PathMaxRetrans: 3, HBInterval: 30 * time.Second}
	m, err := New(cfg, addrA, t0)
	require.NoError(t, err)
	b, err := m.Add(addrB, t0)
	require.NoError(t, err)
	var probes []time.Time
	now := t0
	for now.Before(t0.Add(time.Hour)) {
		now = m.Deadline()
		m.Expire(now, nil)
		for {
			id, ok := m.Due(now)
			if !ok {
				break
			}
			if id == b {
				probes = append(probes, now)
			}
			m.Probe(id, 1, now)
			if id == 0 { // the handshake path answers
				_, ok := m.HeartbeatAck(id, 1, now)
				require.True(t, ok)
			}
		}
	}
	fast := cfg.PathMaxRetrans + 1
	require.Greater(t, len(probes), fast)
	for i := 1; i < fast; i++ {
		assert.Equal(t, 2*DefaultRTO, probes[i].Sub(probes[i-1]), "probe %d: one RTO to expire, one more to the next", i)
	}
	assert.InDelta(t, fast+int(time.Hour/(DefaultRTO+30*time.Second)), len(probes), 2)
	assert.Equal(t, Unconfirmed, m.Info(b).State)
}

// TestRFC9260_8_2_PathMaxRetrans: each timeout counts one error; above
// Path.Max.Retrans the path is inactive; a SACK of its DATA clears the
// counter and makes it active (RFC 7829's state disabled here).
func TestRFC9260_8_2_PathMaxRetrans(t *testing.T) {
	m, a, b := twoPaths(t, Config{PathMaxRetrans: 2, PFMaxRetrans: -1})
	assert.Equal(t, Change{Path: a, From: Active, To: Active}, m.Timeout(a, t0))
	assert.Equal(t, Change{Path: a, From: Active, To: Active}, m.Timeout(a, t0))
	assert.Equal(t, a, m.DataPath())
	assert.Equal(t, Change{Path: a, From: Active, To: Inactive}, m.Timeout(a, t0))
	assert.Equal(t, b, m.DataPath(), "failover to the active alternate")
	assert.Equal(t, Change{Path: a, From: Inactive, To: Active}, m.Acked(a, t0))
	assert.Equal(t, 0, m.Info(a).Errors)
	assert.Equal(t, a, m.DataPath(), "back to the primary")
}

// TestRFC7829_4_PotentiallyFailed: with PF.Max.Retrans 0 the first
// timeout makes the primary potentially failed and new DATA moves to the
// alternate at once; the PF path is probed once per RTO; its HEARTBEAT ACK
// brings DATA back to it; further timeouts make it inactive.
func TestRFC7829_4_PotentiallyFailed(t *testing.T) {
	m, a, b := twoPaths(t, Config{PathMaxRetrans: 3})
	m.SetRTO(a, 200*time.Millisecond)
	assert.Equal(t, Change{Path: a, From: Active, To: PotentiallyFailed}, m.Timeout(a, t0))
	assert.Equal(t, b, m.DataPath())
	assert.Equal(t, b, m.RetransmitPath(a))

	now := t0
	var probesToA []time.Time
	for len(probesToA) < 3 {
		now = m.Deadline()
		m.Expire(now, nil)
		for id, ok := m.Due(now); ok; id, ok = m.Due(now) {
			m.Probe(id, 9, now)
			if id == a {
				probesToA = append(probesToA, now)
			} else {
				_, ok := m.HeartbeatAck(id, 9, now)
				require.True(t, ok)
			}
		}
	}
	assert.Equal(t, t0.Add(200*time.Millisecond), probesToA[0], "first probe one RTO after the timeout")
	assert.Equal(t, 400*time.Millisecond, probesToA[1].Sub(probesToA[0]), "one RTO unanswered, one RTO to the next")
	assert.Equal(t, PotentiallyFailed, m.Info(a).State, "2 errors of 3")

	c, ok := m.HeartbeatAck(a, 9, now)
	require.True(t, ok)
	assert.Equal(t, Change{Path: a, From: PotentiallyFailed, To: Active}, c)
	assert.Equal(t, a, m.DataPath(), "the primary answers again and takes DATA back")

	for range 4 {
		m.Timeout(a, now)
	}
	assert.Equal(t, Inactive, m.Info(a).State)
}

// TestRFC7829_4_AllPotentiallyFailed: when no path is active, DATA goes
// to the potentially-failed path with fewest errors, the most recently
// active one among equals.
func TestRFC7829_4_AllPotentiallyFailed(t *testing.T) {
	m, a, b := twoPaths(t, Config{PathMaxRetrans: 5})
	m.Timeout(a, t0)
	m.Timeout(a, t0)
	m.Timeout(b, t0)
	assert.Equal(t, b, m.DataPath(), "fewer errors")
	m.Timeout(b, t0)
	m.Acked(a, t0.Add(time.Second)) // a active again, later than b
	m.Timeout(a, t0.Add(2*time.Second))
	m.Timeout(a, t0.Add(2*time.Second))
	assert.Equal(t, a, m.DataPath(), "equal errors: the most recently active")
}

// TestRFC9260_6_4_1_RetransmitElsewhere: a retransmission goes to an
// active path other than the one the DATA was last sent to, when there
// is one.
func TestRFC9260_6_4_1_RetransmitElsewhere(t *testing.T) {
	m, a, b := twoPaths(t, Config{})
	assert.Equal(t, b, m.RetransmitPath(a))
	assert.Equal(t, a, m.RetransmitPath(b))
	single, err := New(Config{}, addrA, t0)
	require.NoError(t, err)
	assert.Equal(t, ID(0), single.RetransmitPath(0), "nowhere else to go")
}

// TestRFC9260_8_3_IdleHeartbeat: an idle active path gets a HEARTBEAT
// RTO + HB.interval after it was last used, jittered within ±RTO/2; a
// path carrying DATA gets none; an unanswered one counts an error after
// one RTO.
func TestRFC9260_8_3_IdleHeartbeat(t *testing.T) {
	for _, r := range []uint64{0, 1 << 62, 1<<64 - 1} {
		m, err := New(Config{HBInterval: 5 * time.Second, Rand: func() uint64 { return r }}, addrA, t0)
		require.NoError(t, err)
		d := m.Deadline()
		assert.GreaterOrEqual(t, d, t0.Add(DefaultRTO+5*time.Second-DefaultRTO/2))
		assert.Less(t, d, t0.Add(DefaultRTO+5*time.Second+DefaultRTO/2))
		_, ok := m.Due(d.Add(-time.Millisecond))
		assert.False(t, ok)
		m.Sent(0, d.Add(-time.Second))
		_, ok = m.Due(d)
		assert.False(t, ok, "DATA a second ago: not idle")
		next := m.Deadline()
		require.True(t, next.After(d))
		id, ok := m.Due(next)
		require.True(t, ok)
		m.Probe(id, 3, next)
		assert.Equal(t, next.Add(DefaultRTO), m.Deadline(), "the ACK is due within one RTO")
		ch := m.Expire(next.Add(DefaultRTO), nil)
		assert.Equal(t, []Change{{Path: 0, From: Active, To: PotentiallyFailed}}, ch)
	}
}

// TestHeartbeatsOffForActivePaths: HB.interval negative stops idle
// probing of active paths only.
func TestHeartbeatsOffForActivePaths(t *testing.T) {
	m, err := New(Config{HBInterval: -1}, addrA, t0)
	require.NoError(t, err)
	assert.True(t, m.Deadline().IsZero())
	b, err := m.Add(addrB, t0)
	require.NoError(t, err)
	id, ok := m.Due(t0)
	require.True(t, ok)
	assert.Equal(t, b, id, "verification still runs")
}

// TestRandomEventsKeepInvariants drives random events at three paths and
// checks after each: neither new DATA nor a retransmission goes to an
// unconfirmed path, and DataPath picks a path that is not active only
// when no path is.
func TestRandomEventsKeepInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 200 {
		m, err := New(Config{PathMaxRetrans: 1 + rng.IntN(4), PFMaxRetrans: rng.IntN(3) - 1,
			HBInterval: time.Duration(rng.IntN(3)) * time.Second, Rand: rng.Uint64}, addrA, t0)
		require.NoError(t, err)
		_, _ = m.Add(addrB, t0)
		_, _ = m.Add(addrC, t0)
		now := t0
		for step := range 300 {
			id := ID(rng.IntN(m.Len()))
			now = now.Add(time.Duration(rng.IntN(500)) * time.Millisecond)
			switch rng.IntN(5) {
			case 0:
				if m.Info(id).Confirmed {
					m.Timeout(id, now)
				}
			case 1:
				if m.Info(id).Confirmed {
					m.Acked(id, now)
				}
			case 2:
				m.Expire(now, nil)
				if d, ok := m.Due(now); ok {
					m.Probe(d, uint64(step), now)
					if rng.IntN(2) == 0 {
						_, ok := m.HeartbeatAck(d, uint64(step), now)
						require.True(t, ok)
					}
				}
			case 3:
				_, ok := m.HeartbeatAck(id, rng.Uint64(), now)
				require.False(t, ok)
			case 4:
				m.Sent(m.DataPath(), now)
			}
			dp := m.DataPath()
			require.True(t, m.Info(dp).Confirmed, "run %d step %d: DATA to an unconfirmed path", run, step)
			rp := m.RetransmitPath(dp)
			require.True(t, m.Info(rp).Confirmed, "run %d step %d: retransmission to an unconfirmed path", run, step)
			if m.Info(dp).State != Active {
				for i := range m.Len() {
					require.NotEqual(t, Active, m.Info(ID(i)).State, "run %d step %d: an active path left unused", run, step)
				}
			}
		}
	}
}

// TestRFC6951_5_4_PortPerAddress: the encapsulation port is the
// destination address's own; SetPort changes it and nothing else, and
// LookupHost finds the path by its IP address alone.
func TestRFC6951_5_4_PortPerAddress(t *testing.T) {
	m, a, b := twoPaths(t, Config{})
	id, ok := m.LookupHost(netip.MustParseAddr("::ffff:10.2.0.2"))
	require.True(t, ok)
	assert.Equal(t, b, id)
	_, ok = m.LookupHost(netip.MustParseAddr("10.9.0.2"))
	assert.False(t, ok)

	before := m.Info(b)
	m.SetPort(b, 40000)
	after := m.Info(b)
	assert.Equal(t, netip.MustParseAddrPort("10.2.0.2:40000"), after.Addr)
	before.Addr = after.Addr
	assert.Equal(t, before, after, "state, confirmation and errors kept")
	assert.Equal(t, addrA, m.Info(a).Addr)
	got, ok := m.Lookup(netip.MustParseAddrPort("10.2.0.2:40000"))
	require.True(t, ok)
	assert.Equal(t, b, got)
	_, ok = m.Lookup(addrB)
	assert.False(t, ok, "the old port is no longer a path")
}
