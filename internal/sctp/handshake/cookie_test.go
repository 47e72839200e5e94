package handshake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// fakeClock is a settable clock for CookieSigner.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2030, 1, 2, 3, 4, 5, 678901234, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

func sampleCookie() Cookie {
	return Cookie{
		LocalVerificationTag: 0x11223344,
		LocalInitialTSN:      0xfffffff0,
		PeerVerificationTag:  0xa1b2c3d4,
		PeerInitialTSN:       7,
		PeerARwnd:            1 << 20,
		OutboundStreams:      10,
		InboundStreams:       65535,
		LocalPort:            5000,
		PeerPort:             5001,
		PeerAddr:             netip.MustParseAddrPort("192.0.2.7:9899"),
		PeerAdaptation:       1, // RFC 5043: DDP
		HasPeerAdaptation:    true,
		PeerReconfig:         true,
		LocalTieTag:          0xdeadbeef,
		PeerTieTag:           0xcafef00d,
	}
}

// resign recomputes the MAC of b under the signer's current secret, as if
// the signer had written the (possibly bad) body itself.
func resign(s *CookieSigner, b []byte) {
	binary.BigEndian.PutUint32(b[ckGeneration:], s.cur.gen)
	m := hmac.New(sha256.New, s.cur.secret[:])
	m.Write(b[:len(b)-sha256.Size])
	copy(b[len(b)-sha256.Size:], m.Sum(nil))
}

func TestCookieRoundTrip_RFC9260_5_1_3(t *testing.T) {
	clk := newFakeClock()
	s := NewCookieSigner(0, clk.Now)
	cases := map[string]func(*Cookie){
		"IPv4 peer":             func(*Cookie) {},
		"IPv6 peer":             func(c *Cookie) { c.PeerAddr = netip.MustParseAddrPort("[2001:db8::1]:443") },
		"unbound":               func(c *Cookie) { c.PeerAddr = netip.AddrPort{} },
		"no adaptation":         func(c *Cookie) { c.HasPeerAdaptation, c.PeerAdaptation = false, 0 },
		"no RE-CONFIG":          func(c *Cookie) { c.PeerReconfig = false },
		"zero checksum":         func(c *Cookie) { c.PeerZeroChecksum = true }, // RFC 9653 §4
		"no tie-tags":           func(c *Cookie) { c.LocalTieTag, c.PeerTieTag = 0, 0 },
		"preservative lifespan": func(c *Cookie) { c.Lifespan = 90 * time.Second },
		"listed addresses": func(c *Cookie) {
			c.NumPeerAddrs = copy(c.PeerAddrs[:], []netip.Addr{netip.MustParseAddr("192.0.2.8"),
				netip.MustParseAddr("2001:db8::2")})
		},
		"most listed addresses": func(c *Cookie) {
			for i := range c.PeerAddrs {
				c.PeerAddrs[i] = netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})
			}
			c.NumPeerAddrs = len(c.PeerAddrs)
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			c := sampleCookie()
			mod(&c)
			b := s.Sign(nil, &c)
			require.Len(t, b, CookieLen+16*c.NumPeerAddrs)
			assert.Equal(t, time.UnixMicro(clk.Now().UnixMicro()), c.Created, "Sign stamps the creation time")
			if name != "preservative lifespan" {
				assert.Equal(t, DefaultCookieLifespan, c.Lifespan, "Valid.Cookie.Life (RFC 9260 §16)")
			}
			got, err := s.Verify(b, clk.Now())
			require.NoError(t, err)
			assert.Equal(t, c, got)
		})
	}
}

func TestCookieSignNormalizes(t *testing.T) {
	clk := newFakeClock()
	s := NewCookieSigner(0, clk.Now)
	c := sampleCookie()
	c.PeerAddr = netip.MustParseAddrPort("[::ffff:192.0.2.7]:9899")
	c.HasPeerAdaptation = false
	c.PeerAdaptation = 77
	c.Lifespan = 1500 * time.Microsecond
	b := s.Sign(nil, &c)
	assert.Equal(t, netip.MustParseAddrPort("192.0.2.7:9899"), c.PeerAddr, "IPv4-mapped kept as IPv4")
	assert.Zero(t, c.PeerAdaptation, "no indication, no value")
	assert.Equal(t, time.Millisecond, c.Lifespan, "carried in milliseconds")
	got, err := s.Verify(b, clk.Now())
	require.NoError(t, err)
	assert.Equal(t, c, got)

	c = sampleCookie()
	c.PeerAddr = netip.MustParseAddrPort("[fe80::1%eth0]:7")
	c.Lifespan = 100 * 24 * time.Hour
	b = s.Sign(nil, &c)
	assert.Equal(t, netip.MustParseAddrPort("[fe80::1]:7"), c.PeerAddr, "zone dropped")
	assert.Equal(t, math.MaxUint32*time.Millisecond, c.Lifespan, "about 49.7 days at most")
	got, err = s.Verify(b, clk.Now())
	require.NoError(t, err)
	assert.Equal(t, c, got)

	c = sampleCookie()
	c.PeerAddr = netip.AddrPortFrom(netip.Addr{}, 99) // a port without an address
	b = s.Sign(nil, &c)
	assert.Equal(t, netip.AddrPort{}, c.PeerAddr)
	_, err = s.Verify(b, clk.Now())
	require.NoError(t, err)
}

func TestCookieSignAppends(t *testing.T) {
	clk := newFakeClock()
	s := NewCookieSigner(0, clk.Now)
	c1, c2 := sampleCookie(), sampleCookie()
	c2.PeerInitialTSN = 99
	prefix := []byte{1, 2, 3}
	b := s.Sign(append([]byte(nil), prefix...), &c1)
	b = s.Sign(b, &c2)
	require.Len(t, b, 3+2*CookieLen)
	assert.Equal(t, prefix, b[:3])
	got, err := s.Verify(b[3:3+CookieLen], clk.Now())
	require.NoError(t, err)
	assert.Equal(t, c1, got)
	got, err = s.Verify(b[3+CookieLen:], clk.Now())
	require.NoError(t, err)
	assert.Equal(t, uint32(99), got.PeerInitialTSN)
}

func TestCookieTamperedEveryByte_RFC9260_5_1_5_Step2(t *testing.T) {
	clk := newFakeClock()
	s := NewCookieSigner(0, clk.Now)
	c := sampleCookie()
	b := s.Sign(nil, &c)
	for i := range b {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			x := append([]byte(nil), b...)
			x[i] ^= mask
			_, err := s.Verify(x, clk.Now())
			require.ErrorIs(t, err, errCookieMAC, "byte %d ^ %#x", i, mask)
		}
	}
	_, err := s.Verify(b, clk.Now())
	require.NoError(t, err, "the original still verifies")
}

func TestCookieMalformedLength(t *testing.T) {
	clk := newFakeClock()
	s := NewCookieSigner(0, clk.Now)
	c := sampleCookie()
	b := s.Sign(nil, &c)
	for _, x := range [][]byte{nil, {}, b[:1], b[:CookieLen-1], append(append([]byte(nil), b...), 0), make([]byte, 4096)} {
		_, err := s.Verify(x, clk.Now())
		assert.ErrorIs(t, err, errCookieMalformed, "length %d", len(x))
	}
	// With listed addresses: a partial address, or more than
	// wire.MaxInitAddrs of them, is malformed even under a valid MAC.
	for _, l := range []int{CookieLen + 8, CookieLen + 17, MaxCookieLen + 16, MaxCookieLen + 1} {
		x := make([]byte, l)
		copy(x, b[:cookieFixedLen])
		resign(s, x)
		_, err := s.Verify(x, clk.Now())
		assert.ErrorIs(t, err, errCookieMalformed, "length %d", l)
		_, err = DecodeCookie(x)
		assert.ErrorIs(t, err, errCookieMalformed, "DecodeCookie, length %d", l)
	}
	for _, x := range [][]byte{nil, b[:1], b[:cookieFixedLen]} {
		_, err := DecodeCookie(x)
		assert.ErrorIs(t, err, errCookieMalformed, "DecodeCookie never reads past a short cookie")
	}
}

// A body this package never writes is rejected even under a valid MAC,
// so that every accepted cookie has one encoding.
func TestCookieMalformedBodyUnderValidMAC(t *testing.T) {
	clk := newFakeClock()
	s := NewCookieSigner(0, clk.Now)
	cases := map[string]func(b []byte){
		"unknown version":              func(b []byte) { b[ckVersion] = 2 },
		"unknown flag":                 func(b []byte) { b[ckFlags] |= 0x20 },
		"adaptation value, no flag":    func(b []byte) { b[ckFlags] &^= cookieFlagAdaptation },
		"IPv4 flag without address":    func(b []byte) { b[ckFlags] &^= cookieFlagAddr },
		"IPv4 flag, IPv6 address":      func(b []byte) { b[ckAddr] = 0x20 },
		"IPv6 flag, IPv4-mapped value": func(b []byte) { b[ckFlags] &^= cookieFlagAddr4 },
		"no address, port set": func(b []byte) {
			b[ckFlags] &^= cookieFlagAddr | cookieFlagAddr4
			clear(b[ckAddr : ckAddr+16])
		},
		"no address, address bytes set": func(b []byte) {
			b[ckFlags] &^= cookieFlagAddr | cookieFlagAddr4
			binary.BigEndian.PutUint16(b[ckAddrPort:], 0)
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			c := sampleCookie()
			b := s.Sign(nil, &c)
			mod(b)
			resign(s, b)
			_, err := s.Verify(b, clk.Now())
			assert.ErrorIs(t, err, errCookieMalformed)
		})
	}
}

func TestCookieStale_RFC9260_5_1_5_Step3(t *testing.T) {
	clk := newFakeClock()
	s := NewCookieSigner(24*time.Hour, clk.Now)
	c := sampleCookie()
	b := s.Sign(nil, &c)
	created := c.Created

	cases := []struct {
		name    string
		at      time.Duration
		stale   time.Duration
		measure uint32
	}{
		{"fresh", 0, 0, 0},
		{"at the end of the lifespan", 60 * time.Second, 0, 0},
		{"one microsecond late", 60*time.Second + time.Microsecond, time.Microsecond, 1},
		{"1.5 s late", 61500 * time.Millisecond, 1500 * time.Millisecond, 1500000},
		{"measure saturates at 32 bits", 60*time.Second + 2*time.Hour, 2 * time.Hour, math.MaxUint32},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Verify(b, created.Add(tc.at))
			if tc.stale == 0 {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, errCookieStale)
			var se *staleCookieError
			require.True(t, errors.As(err, &se))
			assert.Equal(t, tc.stale, se.Staleness)
			assert.Equal(t, tc.measure, se.MeasureOfStaleness(), "Measure of Staleness (RFC 9260 §3.3.10.3), µs")
			assert.Contains(t, err.Error(), "stale")
			assert.Equal(t, c, got, "the content comes back for the ERROR reply")
		})
	}
	assert.Zero(t, (&staleCookieError{Staleness: -time.Second}).MeasureOfStaleness())
}

func TestCookieRotation(t *testing.T) {
	clk := newFakeClock()
	t0 := clk.Now()
	s := NewCookieSigner(time.Minute, clk.Now)
	c := sampleCookie()
	c.Lifespan = time.Hour // staleness out of the way
	old := s.Sign(nil, &c)
	gen0 := binary.BigEndian.Uint32(old[ckGeneration:])

	_, err := s.Verify(old, t0.Add(59*time.Second))
	require.NoError(t, err, "same secret")
	_, err = s.Verify(old, t0.Add(61*time.Second))
	require.NoError(t, err, "signed with the previous secret: still verifies")

	clk.Advance(61 * time.Second)
	fresh := s.Sign(nil, &c)
	assert.Equal(t, gen0+1, binary.BigEndian.Uint32(fresh[ckGeneration:]), "signed with the new secret")
	_, err = s.Verify(fresh, clk.Now())
	require.NoError(t, err)

	_, err = s.Verify(old, t0.Add(121*time.Second))
	require.ErrorIs(t, err, errCookieMAC, "two rotations ago: rejected")
	_, err = s.Verify(fresh, t0.Add(121*time.Second))
	require.NoError(t, err, "one rotation ago: accepted")

	// A gap of several periods at once replaces both secrets.
	_, err = s.Verify(fresh, t0.Add(10*time.Minute))
	require.ErrorIs(t, err, errCookieMAC)

	// A clock that steps back does not rotate.
	clk.Advance(10 * time.Minute)
	c2 := sampleCookie()
	b := s.Sign(nil, &c2)
	_, err = s.Verify(b, clk.Now().Add(-time.Hour))
	require.NoError(t, err)
}

func TestCookieOtherSignerRejected_RFC9260_5_1_5_Step2(t *testing.T) {
	clk := newFakeClock()
	a := NewCookieSigner(0, clk.Now)
	b := NewCookieSigner(0, clk.Now)
	b.cur.gen = a.cur.gen // same generation number, different secret
	c := sampleCookie()
	_, err := b.Verify(a.Sign(nil, &c), clk.Now())
	assert.ErrorIs(t, err, errCookieMAC)
}

func TestCookieVerifyFromBindsAddress(t *testing.T) {
	clk := newFakeClock()
	s := NewCookieSigner(time.Hour, clk.Now)
	c := sampleCookie() // bound to 192.0.2.7:9899
	b := s.Sign(nil, &c)
	cases := []struct {
		from string
		err  error
	}{
		{"192.0.2.7:9899", nil},
		{"[::ffff:192.0.2.7]:9899", nil},
		{"192.0.2.7:9898", errCookieAddress},
		{"192.0.2.8:9899", errCookieAddress},
		{"[2001:db8::7]:9899", errCookieAddress},
	}
	for _, tc := range cases {
		got, err := s.VerifyFrom(b, clk.Now(), netip.MustParseAddrPort(tc.from))
		if tc.err == nil {
			require.NoError(t, err, tc.from)
			assert.Equal(t, c, got)
		} else {
			assert.ErrorIs(t, err, tc.err, tc.from)
		}
	}
	// Wrong address wins over staleness: no Stale Cookie error to a stranger.
	_, err := s.VerifyFrom(b, clk.Now().Add(2*time.Minute), netip.MustParseAddrPort("198.51.100.1:1"))
	assert.ErrorIs(t, err, errCookieAddress)
	_, err = s.VerifyFrom(b, clk.Now().Add(2*time.Minute), netip.MustParseAddrPort("192.0.2.7:9899"))
	assert.ErrorIs(t, err, errCookieStale)
	// A tampered cookie is a MAC failure, whatever the address.
	x := append([]byte(nil), b...)
	x[ckAddr+15] ^= 1
	_, err = s.VerifyFrom(x, clk.Now(), netip.MustParseAddrPort("192.0.2.7:9899"))
	assert.ErrorIs(t, err, errCookieMAC)

	// An unbound cookie is accepted from anywhere.
	u := sampleCookie()
	u.PeerAddr = netip.AddrPort{}
	ub := s.Sign(nil, &u)
	_, err = s.VerifyFrom(ub, clk.Now(), netip.MustParseAddrPort("203.0.113.9:1"))
	assert.NoError(t, err)
}

func TestCookieNoAllocs(t *testing.T) {
	clk := newFakeClock()
	s := NewCookieSigner(time.Hour, clk.Now)
	c := sampleCookie()
	buf := make([]byte, 0, CookieLen)
	good := s.Sign(nil, &c)
	bad := append([]byte(nil), good...)
	bad[CookieLen-1] ^= 1
	now := clk.Now()
	from := c.PeerAddr
	assert.Zero(t, testing.AllocsPerRun(200, func() { _ = s.Sign(buf[:0], &c) }), "Sign into a sized buffer")
	assert.Zero(t, testing.AllocsPerRun(200, func() {
		if _, err := s.Verify(good, now); err != nil {
			panic(err)
		}
	}), "Verify")
	assert.Zero(t, testing.AllocsPerRun(200, func() { _, _ = s.VerifyFrom(good, now, from) }), "VerifyFrom")
	assert.Zero(t, testing.AllocsPerRun(200, func() { _, _ = s.Verify(bad, now) }), "rejecting a forged MAC")
	assert.Zero(t, testing.AllocsPerRun(200, func() { _, _ = s.Verify(bad[:10], now) }), "rejecting a short cookie")
}

func TestCookieSignerConcurrent(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := newFakeClock()
	s := NewCookieSigner(time.Second, clk.Now)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, CookieLen)
			for i := 0; i < 500; i++ {
				c := sampleCookie()
				c.PeerInitialTSN = uint32(i)
				buf = s.Sign(buf[:0], &c)
				if g == 0 && i%50 == 0 {
					clk.Advance(300 * time.Millisecond)
				}
				got, err := s.Verify(buf, c.Created)
				if err != nil && !errors.Is(err, errCookieMAC) { // a rotation may pass in between
					t.Errorf("verify: %v", err)
					return
				}
				if err == nil && got.PeerInitialTSN != uint32(i) {
					t.Errorf("got TSN %d, want %d", got.PeerInitialTSN, i)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestNewCookieSignerDefaults(t *testing.T) {
	s := NewCookieSigner(0, nil)
	assert.Equal(t, DefaultCookieRotation, s.period)
	c := sampleCookie()
	b := s.Sign(nil, &c)
	_, err := s.Verify(b, time.Now())
	assert.NoError(t, err)
	assert.WithinDuration(t, time.Now(), c.Created, time.Minute)
}

// FuzzCookieVerify feeds arbitrary COOKIE ECHO contents to Verify and
// VerifyFrom: they never panic, return only the documented errors, and
// whatever they accept re-encodes to the same octets.
func FuzzCookieVerify(f *testing.F) {
	clk := newFakeClock()
	s := NewCookieSigner(time.Hour, clk.Now)
	c := sampleCookie()
	good := s.Sign(nil, &c)
	f.Add(good)
	f.Add(good[:CookieLen-1])
	f.Add([]byte{})
	f.Add(make([]byte, CookieLen))
	u := sampleCookie()
	u.PeerAddr = netip.AddrPort{}
	f.Add(s.Sign(nil, &u))
	v6 := sampleCookie()
	v6.PeerAddr = netip.MustParseAddrPort("[2001:db8::1]:1")
	f.Add(s.Sign(nil, &v6))
	l := sampleCookie()
	l.NumPeerAddrs = copy(l.PeerAddrs[:], []netip.Addr{netip.MustParseAddr("192.0.2.8"), netip.MustParseAddr("2001:db8::2")})
	f.Add(s.Sign(nil, &l))
	f.Add(make([]byte, MaxCookieLen))
	f.Add(make([]byte, MaxCookieLen+16))
	now := clk.Now()
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, at := range []time.Time{now, now.Add(2 * time.Minute)} {
			got, err := s.Verify(b, at)
			switch {
			case err == nil, errors.Is(err, errCookieStale):
				require.Len(t, b, got.encodedLen())
				re := make([]byte, len(b)-sha256.Size)
				got.encodeBody(re)
				require.Equal(t, b[:ckGeneration], re[:ckGeneration], "an accepted cookie re-encodes to itself")
				require.Equal(t, b[ckListed:len(re)], re[ckListed:], "its listed addresses too")
			case errors.Is(err, errCookieMAC), errors.Is(err, errCookieMalformed):
			default:
				t.Fatalf("unexpected error %v", err)
			}
			_, err2 := s.VerifyFrom(b, at, netip.MustParseAddrPort("192.0.2.7:9899"))
			if err2 != nil && !errors.Is(err2, errCookieAddress) && !errors.Is(err2, errCookieStale) &&
				!errors.Is(err2, errCookieMAC) && !errors.Is(err2, errCookieMalformed) {
				t.Fatalf("unexpected error %v", err2)
			}
			require.Equal(t, errors.Is(err, errCookieMAC), errors.Is(err2, errCookieMAC))
			require.Equal(t, errors.Is(err, errCookieMalformed), errors.Is(err2, errCookieMalformed))
		}
	})
}

func TestCookieExpiryBeyondTimeNeverStale(t *testing.T) {
	c := Cookie{Created: time.UnixMicro(math.MaxInt64 - 10), Lifespan: time.Hour}
	assert.NoError(t, checkStale(&c, time.Now()), "an expiry past the end of int64 microseconds never comes")
}

// FuzzDecodeCookie feeds arbitrary bodies under a valid MAC to Verify, so
// that the decoder sees what only a signer could write: it never panics,
// and what it accepts re-encodes to the same octets.
func FuzzDecodeCookie(f *testing.F) {
	clk := newFakeClock()
	s := NewCookieSigner(time.Hour, clk.Now)
	c := sampleCookie()
	f.Add(s.Sign(nil, &c))
	c.NumPeerAddrs = copy(c.PeerAddrs[:], []netip.Addr{netip.MustParseAddr("192.0.2.8"), netip.MustParseAddr("2001:db8::2")})
	f.Add(s.Sign(nil, &c))
	f.Add(make([]byte, CookieLen+3*16))
	f.Add(make([]byte, CookieLen+5))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= CookieLen {
			resign(s, b)
		}
		got, err := s.Verify(b, clk.Now())
		if err != nil {
			require.True(t, errors.Is(err, errCookieMalformed) || errors.Is(err, errCookieStale) || errors.Is(err, errCookieMAC), "%v", err)
			if !errors.Is(err, errCookieStale) {
				return
			}
		}
		require.Len(t, b, got.encodedLen())
		require.LessOrEqual(t, got.NumPeerAddrs, len(got.PeerAddrs))
		re := make([]byte, len(b)-sha256.Size)
		got.encodeBody(re)
		require.Equal(t, b[:ckGeneration], re[:ckGeneration])
		require.Equal(t, b[ckListed:len(re)], re[ckListed:])
	})
}

// TestResponderCookieListsInitAddrs_RFC9260_5_1_2: the addresses an INIT
// lists come back in the cookie of its COOKIE ECHO, the first
// wire.MaxInitAddrs of them.
func TestResponderCookieListsInitAddrs_RFC9260_5_1_2(t *testing.T) {
	h := NewResponder(ResponderConfig{AllowMissingAdaptation: true})
	from := netip.MustParseAddrPort("192.0.2.7:9899")
	for _, n := range []int{0, 2, wire.MaxInitAddrs + 3} {
		in := wire.Init{InitiateTag: 7, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 1}
		for i := range n {
			if i < wire.MaxInitAddrs {
				in.Params.Addrs[i] = netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)})
			}
			in.Params.NumAddrs++
		}
		pkt := in.Append(wire.AppendHeader(nil, wire.Header{SrcPort: 1, DstPort: 2}))
		wire.SetChecksum(pkt)
		var ack []byte
		h.Unknown(pkt, from, func(p []byte) { ack = append([]byte(nil), p...) })
		require.NotNil(t, ack, "INIT ACK sent")
		p, err := wire.ParsePacket(ack)
		require.NoError(t, err)
		it := p.Chunks()
		c, _ := it.Next()
		ia, err := wire.ParseInit(c)
		require.NoError(t, err)
		ck, err := h.signer.Verify(ia.Params.StateCookie, time.Now())
		require.NoError(t, err)
		want := min(n, wire.MaxInitAddrs)
		require.Len(t, ck.Listed(), want)
		for i, a := range ck.Listed() {
			assert.Equal(t, netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}), a)
		}
	}
}
