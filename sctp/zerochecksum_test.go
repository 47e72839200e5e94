package sctp

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	pionsctp "github.com/pion/sctp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/pionlog"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// recordingConn is a spoofableConn that keeps, for each packet it writes
// and reads, its first chunk's type and whether its Checksum field is zero
// or the packet's CRC32c.
type recordingConn struct {
	spoofableConn
	mu               sync.Mutex
	sent, recv       []zcPacket
	sentBad, recvBad int          // neither zero nor the CRC32c
	writeHook        func([]byte) // changes a copy of each packet written
}

type zcPacket struct {
	first wire.ChunkType
	zero  bool
}

func (c *recordingConn) note(list *[]zcPacket, bad *int, b []byte) {
	if len(b) < wire.HeaderLen+wire.ChunkHeaderLen {
		return
	}
	zero := binary.LittleEndian.Uint32(b[8:]) == 0
	c.mu.Lock()
	defer c.mu.Unlock()
	if !zero && !wire.ChecksumOK(b) {
		*bad++
	}
	*list = append(*list, zcPacket{wire.ChunkType(b[wire.HeaderLen]), zero})
}

func (c *recordingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	hook := c.writeHook
	c.mu.Unlock()
	if hook != nil {
		b = bytes.Clone(b)
		hook(b)
	}
	c.note(&c.sent, &c.sentBad, b)
	return c.spoofableConn.Write(b)
}

func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.spoofableConn.Read(b)
	if err == nil {
		c.note(&c.recv, &c.recvBad, b[:n])
	}
	return n, err
}

func (c *recordingConn) packets(sent bool) []zcPacket {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent {
		return append([]zcPacket(nil), c.sent...)
	}
	return append([]zcPacket(nil), c.recv...)
}

// connPair is two recordingConns over loopback UDP, each connected to the
// other: the shape of a DTLS connection (RFC 8261) without the records.
func connPair(t *testing.T) (*recordingConn, *recordingConn) {
	t.Helper()
	ua, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	ub, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ua.Close(); _ = ub.Close() })
	return &recordingConn{spoofableConn: spoofableConn{UDPConn: ua, raddr: ub.LocalAddr().(*net.UDPAddr)}},
		&recordingConn{spoofableConn: spoofableConn{UDPConn: ub, raddr: ua.LocalAddr().(*net.UDPAddr)}}
}

// zcAssociations starts an association over connPair: a dials with cfgA,
// b accepts with cfgB; each delivers what it receives to its channel.
func zcAssociations(t *testing.T, cfgA, cfgB *Config) (a, b *Association, ca, cb *recordingConn, ra, rb chan []byte) {
	t.Helper()
	ca, cb = connPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	accepted := make(chan *Association, 1)
	go func() {
		b, err := AcceptConn(ctx, cb, cfgB)
		assert.NoError(t, err)
		accepted <- b
	}()
	a, err := DialConn(ctx, ca, cfgA)
	require.NoError(t, err)
	b = <-accepted
	require.NotNil(t, b)
	ra, rb = make(chan []byte, 64), make(chan []byte, 64)
	a.Start(func(_ uint16, _ uint32, m []byte) { ra <- bytes.Clone(m) }, func(error) {})
	b.Start(func(_ uint16, _ uint32, m []byte) { rb <- bytes.Clone(m) }, func(error) {})
	t.Cleanup(func() { _ = a.Abort(); _ = b.Abort() })
	return a, b, ca, cb, ra, rb
}

// exchange sends a short and a fragmented message each way and waits for
// them.
func exchange(t *testing.T, a, b *Association, ra, rb chan []byte) {
	t.Helper()
	long := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB: many packets, full-sized chunks
	for _, m := range [][]byte{[]byte("short"), long} {
		require.NoError(t, a.WriteMsg(1, 16, m))
		require.NoError(t, b.WriteMsg(1, 16, m))
		for _, ch := range []chan []byte{ra, rb} {
			select {
			case got := <-ch:
				require.Equal(t, m, got)
			case <-time.After(10 * time.Second):
				t.Fatal("a message did not arrive")
			}
		}
	}
}

// RFC 9653 §5.2, §5.4: two ends that announce Zero Checksum Acceptable
// with the EDMID of SCTP over DTLS send every packet with a zero checksum
// from the COOKIE ACK on, and the INIT, INIT ACK and COOKIE ECHO with
// their CRC32c; messages of one packet and of many get through both ways.
func TestZeroChecksumBothAnnounce_RFC9653_5_2(t *testing.T) {
	cfg := &Config{ZeroChecksum: true}
	a, b, ca, cb, ra, rb := zcAssociations(t, cfg, cfg)
	exchange(t, a, b, ra, rb)
	assert.True(t, a.Stats().ZeroChecksum && b.Stats().ZeroChecksum)
	for _, c := range []*recordingConn{ca, cb} {
		sent := c.packets(true)
		require.NotEmpty(t, sent)
		data := 0
		for _, p := range sent {
			switch p.first {
			case wire.ChunkInit, wire.ChunkInitAck, wire.ChunkCookieEcho:
				assert.False(t, p.zero, "%v carries its CRC32c", p.first)
			default:
				assert.True(t, p.zero, "%v goes with a zero checksum", p.first)
			}
			if p.first == wire.ChunkData {
				data++
			}
		}
		assert.Greater(t, data, 2, "DATA went out")
		assert.Zero(t, c.sentBad, "every checksum sent is zero or the CRC32c")
	}
}

// RFC 9653 §5.1: an end that did not announce the parameter gets the
// CRC32c on every packet, and sends it; the other end, which announced
// it, takes those. Either side may be the one without it.
func TestZeroChecksumOneSide_RFC9653_5_1(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfgA, cfgB *Config
	}{
		{"dialer announces", &Config{ZeroChecksum: true}, nil},
		{"acceptor announces", nil, &Config{ZeroChecksum: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, ca, cb, ra, rb := zcAssociations(t, tc.cfgA, tc.cfgB)
			exchange(t, a, b, ra, rb)
			assert.False(t, a.Stats().ZeroChecksum || b.Stats().ZeroChecksum)
			for _, c := range []*recordingConn{ca, cb} {
				for _, p := range c.packets(true) {
					assert.False(t, p.zero, "%v carries its CRC32c", p.first)
				}
				assert.Zero(t, c.sentBad)
			}
		})
	}
}

// RFC 9653 §5.3: an association that did not announce the parameter
// drops a packet with a zero checksum (RFC 9260 §6.8); one that did takes
// it, but never an INIT or COOKIE ECHO without its CRC32c.
func TestZeroChecksumReceive_RFC9653_5_3(t *testing.T) {
	sack := wire.AppendHeader(nil, wire.Header{SrcPort: 1, DstPort: 2, VerificationTag: 7})
	sack = (&wire.SACK{CumTSNAck: 1, ARwnd: 1 << 16}).Append(sack)
	echo := (&wire.CookieEcho{Cookie: []byte{1, 2, 3, 4}}).Append(wire.AppendHeader(nil, wire.Header{VerificationTag: 7}))
	off, on := &Association{}, &Association{cfg: Config{ZeroChecksum: true}}
	assert.False(t, off.checksumOK(sack), "zero checksum, not announced")
	assert.True(t, on.checksumOK(sack), "zero checksum, announced")
	assert.False(t, on.checksumOK(echo), "a COOKIE ECHO always carries its CRC32c")
	wire.SetChecksum(sack)
	wire.SetChecksum(echo)
	assert.True(t, off.checksumOK(sack) && on.checksumOK(sack) && on.checksumOK(echo), "the CRC32c is always taken")
	sack[len(sack)-1] ^= 1
	assert.False(t, on.checksumOK(sack), "a wrong non-zero checksum is still wrong")
}

// A zero checksum is no way past the CRC32c for a peer that did not
// agree to it: packets a dialer without the parameter receives with a zero
// checksum are dropped, and the association still delivers once the CRC32c
// is back (retransmission, RFC 9260 §6.3.3).
func TestZeroChecksumNotAgreedIsDropped_RFC9653_5_3(t *testing.T) {
	a, b, _, cb, ra, rb := zcAssociations(t, nil, &Config{ZeroChecksum: true})
	var zeroed sync.Once
	cb.mu.Lock()
	cb.writeHook = func(p []byte) {
		if len(p) > wire.HeaderLen && wire.ChunkType(p[wire.HeaderLen]) == wire.ChunkData {
			zeroed.Do(func() { wire.SetZeroChecksum(p) })
		}
	}
	cb.mu.Unlock()
	exchange(t, a, b, ra, rb)
	assert.NotZero(t, b.Stats().Retransmits, "the zeroed DATA was dropped, and sent again")
}

// Interoperation with pion/sctp at its RFC 9653 setting
// (EnableZeroChecksum, what pion's WebRTC stack sets over DTLS): each side
// sends DATA with a zero checksum once the other announced it, and the
// messages arrive both ways.
func TestZeroChecksumPionInterop_RFC9653(t *testing.T) {
	ca, cb := connPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type dialed struct {
		a   *pionsctp.Association
		err error
	}
	pc := make(chan dialed, 1)
	go func() {
		a, err := pionsctp.Client(pionsctp.Config{NetConn: ca, EnableZeroChecksum: true,
			LoggerFactory: pionlog.Factory(slog.New(slog.DiscardHandler))})
		pc <- dialed{a, err}
	}()
	b, err := AcceptConn(ctx, cb, &Config{ZeroChecksum: true, AllowMissingAdaptation: true})
	require.NoError(t, err)
	rb := make(chan []byte, 8)
	b.Start(func(_ uint16, _ uint32, m []byte) { rb <- bytes.Clone(m) }, func(error) {})
	d := <-pc
	require.NoError(t, d.err)
	t.Cleanup(func() { _ = d.a.Close(); _ = b.Abort() })

	s, err := d.a.OpenStream(1, pionsctp.PayloadTypeWebRTCBinary)
	require.NoError(t, err)
	msg := bytes.Repeat([]byte("pion "), 1000) // more than one packet
	_, err = s.Write(msg)
	require.NoError(t, err)
	select {
	case got := <-rb:
		require.Equal(t, msg, got)
	case <-ctx.Done():
		t.Fatal("pion's message did not arrive")
	}
	require.NoError(t, b.WriteMsg(1, uint32(pionsctp.PayloadTypeWebRTCBinary), []byte("to pion")))
	buf := make([]byte, 100)
	require.NoError(t, s.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, err := s.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "to pion", string(buf[:n]))
	require.NoError(t, s.SetReadDeadline(time.Time{})) // ends pion's deadline goroutine

	fromPion, toPion := 0, 0
	for _, p := range cb.packets(false) {
		if p.first == wire.ChunkData && p.zero {
			fromPion++
		}
	}
	for _, p := range cb.packets(true) {
		if p.first == wire.ChunkData && p.zero {
			toPion++
		}
	}
	assert.Positive(t, fromPion, "pion sent DATA with a zero checksum: it took our announcement")
	assert.Positive(t, toPion, "we sent DATA with a zero checksum, and pion took it")
	assert.Zero(t, cb.recvBad+cb.sentBad)
}

// Over plain UDP nothing else checks the packets: Dial and Listen refuse
// ZeroChecksum with ErrConfig (RFC 9653 §5.1).
func TestZeroChecksumRefusedOverUDP_RFC9653_5_1(t *testing.T) {
	_, err := Listen("udp4", "127.0.0.1:0", &Config{ZeroChecksum: true})
	assert.ErrorIs(t, err, ErrConfig)
	_, err = Dial(context.Background(), "udp4", "127.0.0.1:9", &Config{ZeroChecksum: true})
	assert.ErrorIs(t, err, ErrConfig)
}
