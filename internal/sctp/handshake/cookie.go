package handshake

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"math"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// DefaultCookieLifespan is Valid.Cookie.Life, the lifespan of a State
// Cookie (RFC 9260 §16).
const DefaultCookieLifespan = 60 * time.Second

// DefaultCookieRotation is how long a CookieSigner signs with one secret
// before drawing a new one, unless told otherwise.
const DefaultCookieRotation = 60 * time.Second

// CookieLen is the length of a signed State Cookie that carries no
// listed addresses: a fixed 76-octet body, of which the last 4 octets
// name the signing secret, followed by its 32-octet HMAC-SHA256. Each
// address the peer's INIT listed adds 16 octets before the MAC, up to
// MaxCookieLen.
const CookieLen = cookieFixedLen + sha256.Size

// MaxCookieLen is the length of a cookie carrying wire.MaxInitAddrs
// addresses.
const MaxCookieLen = CookieLen + wire.MaxInitAddrs*cookieAddrLen

// The fixed binary layout of a cookie, network byte order.
const (
	cookieVersion = 1

	ckVersion      = 0  // 1 octet: cookieVersion
	ckFlags        = 1  // 1 octet: cookieFlag*
	ckOutStreams   = 2  // 2: negotiated outbound streams
	ckInStreams    = 4  // 2: negotiated inbound streams
	ckLocalPort    = 6  // 2: our SCTP port
	ckPeerPort     = 8  // 2: the peer's SCTP port
	ckAddrPort     = 10 // 2: the peer's UDP port
	ckLocalVTag    = 12 // 4
	ckLocalTSN     = 16 // 4
	ckPeerVTag     = 20 // 4
	ckPeerTSN      = 24 // 4
	ckPeerARwnd    = 28 // 4
	ckAdaptation   = 32 // 4
	ckLocalTie     = 36 // 4
	ckPeerTie      = 40 // 4
	ckCreated      = 44 // 8: microseconds since the Unix epoch
	ckLifespan     = 52 // 4: milliseconds
	ckAddr         = 56 // 16: the peer's IP address, IPv4 as IPv4-mapped IPv6
	ckGeneration   = 72 // 4: the generation of the signing secret
	ckListed       = 76 // 16 each: the INIT's listed addresses, as ckAddr
	cookieFixedLen = 76
	cookieAddrLen  = 16
	cookieFlagAll  = cookieFlagAdaptation | cookieFlagReconfig | cookieFlagAddr | cookieFlagAddr4 | cookieFlagZeroChecksum

	cookieFlagAdaptation   = 1 << 0 // PeerAdaptation present
	cookieFlagReconfig     = 1 << 1 // PeerReconfig
	cookieFlagAddr         = 1 << 2 // PeerAddr set
	cookieFlagAddr4        = 1 << 3 // PeerAddr is IPv4
	cookieFlagZeroChecksum = 1 << 4 // PeerZeroChecksum
)

// Errors of CookieSigner.Verify.
var (
	// errCookieMalformed: the cookie does not have the layout this
	// package writes (wrong length, or, after its MAC verified, a field
	// this package never writes).
	errCookieMalformed = errors.New("sctp: malformed state cookie")
	// errCookieMAC: the MAC does not verify under the current or the
	// previous secret (RFC 9260 §5.1.5 step 2: discard silently).
	errCookieMAC = errors.New("sctp: state cookie MAC does not verify")
	// errCookieStale: the cookie outlived its lifespan (RFC 9260 §5.1.5
	// step 3). Verify returns it wrapped in a *staleCookieError.
	errCookieStale = errors.New("sctp: stale state cookie")
	// errCookieAddress: a cookie bound to one peer address came from
	// another (VerifyFrom).
	errCookieAddress = errors.New("sctp: state cookie from another address")
)

// staleCookieError reports a cookie whose MAC verified but whose lifespan
// has run out. errors.Is(err, errCookieStale) holds for it.
type staleCookieError struct {
	// Staleness is how long ago the cookie expired.
	Staleness time.Duration
}

// Error implements error.
func (e *staleCookieError) Error() string {
	return fmt.Sprintf("%v: expired %v ago", errCookieStale, e.Staleness)
}

// Unwrap returns errCookieStale.
func (e *staleCookieError) Unwrap() error { return errCookieStale }

// MeasureOfStaleness returns the Measure of Staleness of the Stale Cookie
// error cause (RFC 9260 §3.3.10.3): the time since the cookie expired, in
// microseconds, saturated to 32 bits.
func (e *staleCookieError) MeasureOfStaleness() uint32 {
	us := e.Staleness.Microseconds()
	if us < 0 {
		return 0
	}
	return uint32(min(us, math.MaxUint32))
}

// Cookie is the content of the State Cookie that the passive side of an
// association start puts in its INIT ACK (RFC 9260 §5.1.3) and gets back
// in a COOKIE ECHO (§5.1.5): everything needed to build the association
// without keeping any state between INIT and COOKIE ECHO. "Local" is the
// endpoint that makes the cookie, "Peer" the one that sent the INIT.
type Cookie struct {
	// Created is when the cookie was signed; Sign sets it.
	Created time.Time
	// Lifespan is how long after Created the cookie is accepted
	// (RFC 9260 §5.1.3: Valid.Cookie.Life, plus any Cookie Preservative
	// increment the endpoint grants). Sign sets defaultCookieLifespan if
	// it is zero; it is carried in milliseconds.
	Lifespan time.Duration

	// LocalVerificationTag is our Initiate Tag, sent in the INIT ACK: the
	// Verification Tag of every packet the peer sends.
	LocalVerificationTag uint32
	// LocalInitialTSN is the Initial TSN of our DATA.
	LocalInitialTSN uint32
	// PeerVerificationTag is the Initiate Tag of the peer's INIT: the
	// Verification Tag we put in our packets.
	PeerVerificationTag uint32
	// PeerInitialTSN is the Initial TSN of the peer's INIT.
	PeerInitialTSN uint32
	// PeerARwnd is the Advertised Receiver Window Credit of the INIT.
	PeerARwnd uint32
	// OutboundStreams is the negotiated number of streams we send on:
	// min(our OS, the peer's MIS) (RFC 9260 §5.1.1).
	OutboundStreams uint16
	// InboundStreams is the negotiated number of streams the peer sends
	// on: min(the peer's OS, our MIS).
	InboundStreams uint16

	// LocalPort and PeerPort are the SCTP ports of the association; the
	// caller checks them against the COOKIE ECHO's common header
	// (RFC 9260 §5.1.5 step 3).
	LocalPort, PeerPort uint16
	// PeerAddr is the peer's UDP address (UDP encapsulation); its zero
	// value leaves the cookie unbound. VerifyFrom rejects a bound cookie
	// that arrives from another address. The zone of an IPv6 address is
	// not kept, and an IPv4-mapped address is kept as IPv4.
	PeerAddr netip.AddrPort

	// PeerAdaptation is the peer's Adaptation Layer Indication (RFC 5061
	// §4.2.6; RFC 5043 §5 uses it for DDP), valid if HasPeerAdaptation.
	PeerAdaptation    uint32
	HasPeerAdaptation bool
	// PeerReconfig reports that the peer's INIT listed RE-CONFIG in its
	// Supported Extensions (RFC 6525).
	PeerReconfig bool
	// PeerZeroChecksum reports that the peer's INIT announced Zero
	// Checksum Acceptable for SCTP over DTLS (RFC 9653 §4, EDMID 1).
	PeerZeroChecksum bool

	// LocalTieTag and PeerTieTag are the Tie-Tags of RFC 9260 §5.2.2: when
	// an INIT arrives for an existing association they hold our and the
	// peer's current Verification Tags, for the collision handling of
	// §5.2.4. Zero otherwise.
	LocalTieTag, PeerTieTag uint32

	// PeerAddrs are the first NumPeerAddrs of the IPv4 and IPv6 addresses
	// the INIT listed (RFC 9260 §5.1.2): the association's other
	// destinations, to be verified before use (§5.4). Sign keeps them as
	// PeerAddr (IPv4 unmapped, no zone) and drops invalid ones.
	PeerAddrs    [wire.MaxInitAddrs]netip.Addr
	NumPeerAddrs int
}

// Listed returns the addresses the peer's INIT listed.
func (c *Cookie) Listed() []netip.Addr {
	return c.PeerAddrs[:min(max(c.NumPeerAddrs, 0), wire.MaxInitAddrs)]
}

// encodedLen is the length of c signed.
func (c *Cookie) encodedLen() int { return CookieLen + len(c.Listed())*cookieAddrLen }

// encodeBody writes the cookie into b[:ckGeneration] and its listed
// addresses after the fixed part; the caller has normalized Created,
// Lifespan, PeerAddr and PeerAddrs.
func (c *Cookie) encodeBody(b []byte) {
	var flags byte
	if c.HasPeerAdaptation {
		flags |= cookieFlagAdaptation
	}
	if c.PeerReconfig {
		flags |= cookieFlagReconfig
	}
	if c.PeerZeroChecksum {
		flags |= cookieFlagZeroChecksum
	}
	addr := c.PeerAddr.Addr()
	if addr.IsValid() {
		flags |= cookieFlagAddr
		if addr.Is4() {
			flags |= cookieFlagAddr4
		}
	}
	b[ckVersion] = cookieVersion
	b[ckFlags] = flags
	be := binary.BigEndian
	be.PutUint16(b[ckOutStreams:], c.OutboundStreams)
	be.PutUint16(b[ckInStreams:], c.InboundStreams)
	be.PutUint16(b[ckLocalPort:], c.LocalPort)
	be.PutUint16(b[ckPeerPort:], c.PeerPort)
	be.PutUint16(b[ckAddrPort:], c.PeerAddr.Port())
	be.PutUint32(b[ckLocalVTag:], c.LocalVerificationTag)
	be.PutUint32(b[ckLocalTSN:], c.LocalInitialTSN)
	be.PutUint32(b[ckPeerVTag:], c.PeerVerificationTag)
	be.PutUint32(b[ckPeerTSN:], c.PeerInitialTSN)
	be.PutUint32(b[ckPeerARwnd:], c.PeerARwnd)
	adaptation := c.PeerAdaptation
	if !c.HasPeerAdaptation {
		adaptation = 0
	}
	be.PutUint32(b[ckAdaptation:], adaptation)
	be.PutUint32(b[ckLocalTie:], c.LocalTieTag)
	be.PutUint32(b[ckPeerTie:], c.PeerTieTag)
	be.PutUint64(b[ckCreated:], uint64(c.Created.UnixMicro()))
	be.PutUint32(b[ckLifespan:], uint32(c.Lifespan/time.Millisecond))
	a16 := [16]byte{}
	if addr.IsValid() {
		a16 = addr.As16()
	}
	copy(b[ckAddr:ckAddr+16], a16[:])
	for i, la := range c.Listed() {
		a16 = la.As16()
		copy(b[ckListed+i*cookieAddrLen:], a16[:])
	}
}

// DecodeCookie parses a signed cookie (body and MAC) whose MAC has
// verified. A length this package never writes, or any field it never
// writes, makes it malformed, so that every accepted cookie has exactly
// one encoding.
func DecodeCookie(b []byte) (Cookie, error) {
	n, ok := listedCount(len(b))
	if !ok || b[ckVersion] != cookieVersion || b[ckFlags]&^cookieFlagAll != 0 {
		return Cookie{}, errCookieMalformed
	}
	be := binary.BigEndian
	flags := b[ckFlags]
	c := Cookie{
		Created:              time.UnixMicro(int64(be.Uint64(b[ckCreated:]))),
		Lifespan:             time.Duration(be.Uint32(b[ckLifespan:])) * time.Millisecond,
		LocalVerificationTag: be.Uint32(b[ckLocalVTag:]),
		LocalInitialTSN:      be.Uint32(b[ckLocalTSN:]),
		PeerVerificationTag:  be.Uint32(b[ckPeerVTag:]),
		PeerInitialTSN:       be.Uint32(b[ckPeerTSN:]),
		PeerARwnd:            be.Uint32(b[ckPeerARwnd:]),
		OutboundStreams:      be.Uint16(b[ckOutStreams:]),
		InboundStreams:       be.Uint16(b[ckInStreams:]),
		LocalPort:            be.Uint16(b[ckLocalPort:]),
		PeerPort:             be.Uint16(b[ckPeerPort:]),
		PeerAdaptation:       be.Uint32(b[ckAdaptation:]),
		HasPeerAdaptation:    flags&cookieFlagAdaptation != 0,
		PeerReconfig:         flags&cookieFlagReconfig != 0,
		PeerZeroChecksum:     flags&cookieFlagZeroChecksum != 0,
		LocalTieTag:          be.Uint32(b[ckLocalTie:]),
		PeerTieTag:           be.Uint32(b[ckPeerTie:]),
	}
	if !c.HasPeerAdaptation && c.PeerAdaptation != 0 {
		return Cookie{}, errCookieMalformed
	}
	port := be.Uint16(b[ckAddrPort:])
	a16 := [16]byte(b[ckAddr : ckAddr+16])
	addr := netip.AddrFrom16(a16)
	switch {
	case flags&cookieFlagAddr == 0:
		if flags&cookieFlagAddr4 != 0 || port != 0 || a16 != [16]byte{} {
			return Cookie{}, errCookieMalformed
		}
	case flags&cookieFlagAddr4 != 0:
		if !addr.Is4In6() {
			return Cookie{}, errCookieMalformed
		}
		c.PeerAddr = netip.AddrPortFrom(addr.Unmap(), port)
	default:
		if addr.Is4In6() {
			return Cookie{}, errCookieMalformed
		}
		c.PeerAddr = netip.AddrPortFrom(addr, port)
	}
	for i := range n {
		off := ckListed + i*cookieAddrLen
		c.PeerAddrs[i] = netip.AddrFrom16([16]byte(b[off : off+cookieAddrLen])).Unmap()
	}
	c.NumPeerAddrs = n
	return c, nil
}

// listedCount is the number of listed addresses of a signed cookie of l
// octets; ok is false for a length Sign never produces.
func listedCount(l int) (n int, ok bool) {
	if l < CookieLen || l > MaxCookieLen || (l-CookieLen)%cookieAddrLen != 0 {
		return 0, false
	}
	return (l - CookieLen) / cookieAddrLen, true
}

// cookieKey is one signing secret and its keyed hash.
type cookieKey struct {
	gen    uint32
	secret [32]byte
	mac    hash.Hash
	valid  bool
}

func newCookieKey(gen uint32) cookieKey {
	k := cookieKey{gen: gen, valid: true}
	_, _ = rand.Read(k.secret[:]) // crypto/rand.Read never fails
	k.mac = hmac.New(sha256.New, k.secret[:])
	return k
}

// CookieSigner makes and checks State Cookies (RFC 9260 §5.1.3, §5.1.5).
// A cookie is the fixed layout of a Cookie followed by an HMAC-SHA256
// over it under a secret that only this process knows. The secret is
// drawn from crypto/rand and replaced every rotation period; the previous
// secret is kept for one more period, so a cookie verifies during at
// least one full period after it was signed and during at most two.
// The rotation period should therefore be at least the cookie lifespan;
// a cookie older than two periods fails with errCookieMAC instead of
// errCookieStale, which RFC 9260 allows (§5.1.5 step 2 discards any cookie
// that does not authenticate).
type CookieSigner struct {
	// A CookieSigner is safe for concurrent use. Sign into a buffer with
	// CookieLen free octets, and Verify of a valid cookie, do not allocate
	// (except when a rotation falls due, which draws a new secret).

	mu        sync.Mutex
	period    time.Duration
	now       func() time.Time
	rotatedAt time.Time
	cur, prev cookieKey
	scratch   [sha256.Size]byte
}

// NewCookieSigner returns a signer that rotates its secret every rotation
// (defaultCookieRotation if zero or negative) and reads the time from now
// (time.Now if nil).
func NewCookieSigner(rotation time.Duration, now func() time.Time) *CookieSigner {
	if rotation <= 0 {
		rotation = DefaultCookieRotation
	}
	if now == nil {
		now = time.Now
	}
	var g [4]byte
	_, _ = rand.Read(g[:])
	return &CookieSigner{
		period:    rotation,
		now:       now,
		rotatedAt: now(),
		cur:       newCookieKey(binary.BigEndian.Uint32(g[:])),
	}
}

// rotateLocked replaces the secrets for every whole period since the last
// rotation: after one, the current secret becomes the previous one; after
// two or more, both are new.
func (s *CookieSigner) rotateLocked(now time.Time) {
	el := now.Sub(s.rotatedAt)
	if el < s.period {
		return
	}
	n := el / s.period
	s.rotatedAt = s.rotatedAt.Add(n * s.period)
	if n >= 2 {
		s.prev = newCookieKey(s.cur.gen + uint32(n) - 1)
	} else {
		s.prev = s.cur
	}
	s.cur = newCookieKey(s.cur.gen + uint32(n))
}

// Sign stamps c.Created with the signer's clock (to the microsecond),
// sets c.Lifespan to defaultCookieLifespan if it is zero or negative
// (lifespans are carried in milliseconds, at most about 49 days, and c is
// updated to the value carried), and appends the signed cookie, CookieLen
// octets and 16 per listed address, to dst. It allocates only if dst lacks the room.
func (s *CookieSigner) Sign(dst []byte, c *Cookie) []byte {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotateLocked(now)

	c.Created = time.UnixMicro(now.UnixMicro())
	if c.Lifespan <= 0 {
		c.Lifespan = DefaultCookieLifespan
	}
	c.Lifespan = min(c.Lifespan, math.MaxUint32*time.Millisecond).Truncate(time.Millisecond)
	if a := c.PeerAddr.Addr(); a.IsValid() {
		c.PeerAddr = netip.AddrPortFrom(a.Unmap().WithZone(""), c.PeerAddr.Port())
	} else {
		c.PeerAddr = netip.AddrPort{}
	}
	if !c.HasPeerAdaptation {
		c.PeerAdaptation = 0
	}
	c.normalizeListed()

	off, l := len(dst), c.encodedLen()
	dst = slices.Grow(dst, l)[:off+l]
	b := dst[off:]
	c.encodeBody(b)
	binary.BigEndian.PutUint32(b[ckGeneration:], s.cur.gen)
	mac := l - sha256.Size
	s.cur.mac.Reset()
	s.cur.mac.Write(b[:mac])
	s.cur.mac.Sum(b[mac:mac])
	return dst
}

// normalizeListed keeps the valid listed addresses, unmapped and without
// zone, at the front of PeerAddrs and clears the rest.
func (c *Cookie) normalizeListed() {
	n := 0
	for _, a := range c.Listed() {
		if a.IsValid() {
			c.PeerAddrs[n] = a.Unmap().WithZone("")
			n++
		}
	}
	clear(c.PeerAddrs[n:])
	c.NumPeerAddrs = n
}

// Verify checks a cookie from a COOKIE ECHO (RFC 9260 §5.1.5) at time now
// and returns its content. In order:
func (s *CookieSigner) Verify(b []byte, now time.Time) (Cookie, error) {
	//   - a cookie of a length Sign never writes is errCookieMalformed;
	//   - the MAC is compared in constant time (hmac.Equal) against the one
	//     computed under the secret the cookie names, which must be the
	//     current or the previous one (steps 1 and 2); a mismatch is
	//     errCookieMAC, and nothing in the cookie is looked at before;
	//   - a body this package would not have written is errCookieMalformed;
	//   - a cookie past Created+Lifespan is a *staleCookieError (wrapping
	//     errCookieStale) whose MeasureOfStaleness goes into the Stale Cookie
	//     error cause (step 3).
	//
	// Verify does not check the cookie against the packet: the Verification
	// Tag and ports of the COOKIE ECHO (step 3 of §5.1.5 compares them with
	// LocalVerificationTag, LocalPort and PeerPort) and the source address
	// (see VerifyFrom) are the caller's. With a stale cookie the content is
	// returned too, since the ERROR chunk that reports it goes to the peer
	// with its Verification Tag. It never panics, whatever b holds.

	c, err := s.verifyMAC(b, now)
	if err != nil {
		return Cookie{}, err
	}
	return c, checkStale(&c, now)
}

// VerifyFrom is Verify for a COOKIE ECHO that arrived from the UDP
// address from: a cookie bound to a peer address (Cookie.PeerAddr set)
// that arrives from another address fails with errCookieAddress, checked
// before staleness so that no Stale Cookie error goes to an address that
// never sent the INIT.
func (s *CookieSigner) VerifyFrom(b []byte, now time.Time, from netip.AddrPort) (Cookie, error) {
	c, err := s.verifyMAC(b, now)
	if err != nil {
		return Cookie{}, err
	}
	if c.PeerAddr.IsValid() {
		f := netip.AddrPortFrom(from.Addr().Unmap().WithZone(""), from.Port())
		if f != c.PeerAddr {
			return Cookie{}, errCookieAddress
		}
	}
	return c, checkStale(&c, now)
}

func (s *CookieSigner) verifyMAC(b []byte, now time.Time) (Cookie, error) {
	if _, ok := listedCount(len(b)); !ok {
		return Cookie{}, errCookieMalformed
	}
	s.mu.Lock()
	s.rotateLocked(now)
	gen := binary.BigEndian.Uint32(b[ckGeneration:])
	var k *cookieKey
	switch {
	case gen == s.cur.gen:
		k = &s.cur
	case s.prev.valid && gen == s.prev.gen:
		k = &s.prev
	default:
		s.mu.Unlock()
		return Cookie{}, errCookieMAC
	}
	mac := len(b) - sha256.Size
	k.mac.Reset()
	k.mac.Write(b[:mac])
	ok := hmac.Equal(k.mac.Sum(s.scratch[:0]), b[mac:])
	s.mu.Unlock()
	if !ok {
		return Cookie{}, errCookieMAC
	}
	return DecodeCookie(b)
}

func checkStale(c *Cookie, now time.Time) error {
	created := c.Created.UnixMicro()
	expiry := created + c.Lifespan.Microseconds()
	if expiry < created { // overflow: expires after the end of time
		return nil
	}
	if n := now.UnixMicro(); n > expiry {
		return &staleCookieError{Staleness: time.Duration(n-expiry) * time.Microsecond}
	}
	return nil
}
