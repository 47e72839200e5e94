package pion

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// initPacket builds an SCTP packet (RFC 9260 §3.1) with one INIT chunk
// (§3.3.2) carrying params, with a valid CRC32c.
func initPacket(params ...[]byte) []byte {
	b := []byte{
		0x13, 0x88, 0x13, 0x88, // ports 5000 → 5000
		0, 0, 0, 0, // verification tag 0 (INIT)
		0, 0, 0, 0, // checksum
		1, 0, 0, 0, // INIT, flags, length (below)
		0xde, 0xad, 0xbe, 0xef, // initiate tag
		0, 0x01, 0, 0, // a_rwnd 65536
		0, 64, 0, 64, // OS, MIS
		0, 0, 0, 1, // initial TSN
	}
	for _, p := range params {
		b = append(b, p...)
	}
	binary.BigEndian.PutUint16(b[14:], uint16(len(b)-12))
	wire.SetChecksum(b)
	return b
}

// Parameters as Linux 6.1 sends them in INIT (RFC 9260 §3.3.2.1, RFC 3758,
// RFC 5061, RFC 6525).
var (
	pSupportedAddrTypes = []byte{0x00, 0x0c, 0x00, 0x06, 0x00, 0x05, 0x00, 0x00} // IPv4, padded
	pIPv4Addr           = []byte{0x00, 0x05, 0x00, 0x08, 127, 0, 0, 1}
	pECN                = []byte{0x80, 0x00, 0x00, 0x04}
	pFwdTSN             = []byte{0xc0, 0x00, 0x00, 0x04}
	pSupportedExt       = []byte{0x80, 0x08, 0x00, 0x06, 0x82, 0xc0, 0x00, 0x00} // RE-CONFIG, FORWARD-TSN
	pAdaptation         = []byte{0xc0, 0x06, 0x00, 0x08, 0, 0, 0, 1}             // RFC 5043 §5.1
	pUnknownStop        = []byte{0x00, 0x42, 0x00, 0x05, 0xff, 0, 0, 0}
	pUnknownStopReport  = []byte{0x40, 0x42, 0x00, 0x04}
	pUnknownSkip        = []byte{0x80, 0x42, 0x00, 0x04}
)

func TestStripInitParams(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      [][]byte
		want    [][]byte
		changed bool
	}{
		{"Linux INIT: Supported Address Types removed, rest kept (RFC 9260 §3.3.2.1)",
			[][]byte{pSupportedAddrTypes, pECN, pFwdTSN, pSupportedExt, pAdaptation},
			[][]byte{pECN, pFwdTSN, pSupportedExt, pAdaptation}, true},
		{"address parameters removed",
			[][]byte{pIPv4Addr, pSupportedAddrTypes, pECN},
			[][]byte{pECN}, true},
		{"unknown 00: this and every later parameter cut (RFC 9260 §3.2.1)",
			[][]byte{pECN, pUnknownStop, pFwdTSN},
			[][]byte{pECN}, true},
		{"unknown 01: cut as well",
			[][]byte{pFwdTSN, pUnknownStopReport, pECN},
			[][]byte{pFwdTSN}, true},
		{"unknown 10/11: left for the receiver to skip",
			[][]byte{pUnknownSkip, pAdaptation, pECN},
			[][]byte{pUnknownSkip, pAdaptation, pECN}, false},
		{"nothing to do", [][]byte{pECN, pFwdTSN}, [][]byte{pECN, pFwdTSN}, false},
		{"no parameters", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkt := initPacket(tc.in...)
			n, changed, err := stripInitParams(pkt, knownInitParam)
			require.NoError(t, err)
			assert.Equal(t, tc.changed, changed)
			assert.Equal(t, initPacket(tc.want...), pkt[:n])
		})
	}
}

func TestStripInitParamsRejectsMalformed(t *testing.T) {
	good := initPacket(pSupportedAddrTypes, pECN)
	for _, tc := range []struct {
		name string
		pkt  []byte
		want error
	}{
		{"short", good[:14], errInitFilterShort},
		{"not INIT", func() []byte { b := append([]byte(nil), good...); b[12] = 2; return b }(), errInitFilterNotInit},
		{"chunk length past packet", func() []byte { b := append([]byte(nil), good...); b[15] += 8; return b }(), errInitFilterShort},
		{"chunk length below INIT", func() []byte { b := append([]byte(nil), good...); b[14], b[15] = 0, 8; return b }(), errInitFilterShort},
		{"parameter length 2", func() []byte { b := append([]byte(nil), good...); b[35] = 2; return b }(), errInitFilterShort},
		{"parameter past chunk", func() []byte { b := append([]byte(nil), good...); b[43] = 0x40; return b }(), errInitFilterShort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]byte(nil), tc.pkt...)
			n, changed, err := stripInitParams(tc.pkt, knownInitParam)
			assert.ErrorIs(t, err, tc.want)
			assert.False(t, changed)
			assert.Equal(t, len(tc.pkt), n)
			assert.Equal(t, before, tc.pkt, "a malformed packet is left unchanged")
		})
	}
}

func FuzzStripInitParams(f *testing.F) {
	f.Add(initPacket(pSupportedAddrTypes, pECN, pFwdTSN, pSupportedExt, pAdaptation))
	f.Add(initPacket(pIPv4Addr, pUnknownStop, pECN))
	f.Add(initPacket())
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 4})
	f.Fuzz(func(t *testing.T, pkt []byte) {
		orig := append([]byte(nil), pkt...)
		n, changed, err := stripInitParams(pkt, knownInitParam)
		if err != nil || !changed {
			if n != len(pkt) || string(orig) != string(pkt) {
				t.Fatalf("unchanged packet modified")
			}
			return
		}
		if n > len(pkt) || n < wire.HeaderLen+wire.ChunkHeaderLen+sctpInitFixedLen {
			t.Fatalf("length %d of %d", n, len(pkt))
		}
		out := pkt[:n]
		if !wire.ChecksumOK(out) {
			t.Fatalf("bad checksum")
		}
		// The result needs no further rewriting and parses.
		m, again, err := stripInitParams(append([]byte(nil), out...), knownInitParam)
		if err != nil || again || m != n {
			t.Fatalf("second pass: %d %v %v", m, again, err)
		}
	})
}

// fakePacketConn delivers queued packets on Read.
type fakePacketConn struct {
	net.Conn
	in chan []byte
}

func (c *fakePacketConn) Read(b []byte) (int, error) { return copy(b, <-c.in), nil }

func TestInitFilterConn(t *testing.T) {
	in := make(chan []byte, 2)
	f := newInitFilterConn(&fakePacketConn{in: in})
	in <- initPacket(pSupportedAddrTypes, pECN)
	data := []byte{0x13, 0x88, 0x13, 0x88, 1, 2, 3, 4, 0, 0, 0, 0, 0, 3, 0, 4} // a DATA chunk header
	in <- data
	buf := make([]byte, 1500)
	n, err := f.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, initPacket(pECN), buf[:n])
	n, err = f.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, data, buf[:n], "other packets pass unchanged")
	assert.EqualValues(t, 1, f.Stripped())
}

// TestInitFilterConnWithPion checks the filter against pion/sctp itself: a
// passive pion endpoint ignores an INIT carrying Linux's Supported Address
// Types parameter, and answers it with an INIT-ACK behind InitFilterConn.
func TestInitFilterConnWithPion(t *testing.T) {
	for _, filtered := range []bool{false, true} {
		t.Run(map[bool]string{false: "bare pion drops the INIT", true: "filtered pion answers"}[filtered], func(t *testing.T) {
			peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			require.NoError(t, err)
			defer peer.Close()
			conn, err := net.DialUDP("udp4", nil, peer.LocalAddr().(*net.UDPAddr))
			require.NoError(t, err)
			var c net.Conn = conn
			var f *initFilterConn
			if filtered {
				f = newInitFilterConn(conn)
				c = f
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				if tr, err := newTransport(ctx, c, false, Config{MTU: 1200}); err == nil {
					tr.Abort()
				} else {
					c.Close()
				}
			}()
			defer func() { cancel(); <-done }()

			// A Linux-style INIT, as the kernel sends it over UDP (RFC 6951).
			init := initPacket(pSupportedAddrTypes, pECN, pFwdTSN, pSupportedExt, pAdaptation)
			buf := make([]byte, 9000)
			gotAck := false
			for try := 0; try < 3 && !gotAck; try++ {
				_, err = peer.WriteTo(init, conn.LocalAddr())
				require.NoError(t, err)
				peer.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				n, _, err := peer.ReadFrom(buf)
				if err == nil && n > wire.HeaderLen && buf[wire.HeaderLen] == 2 {
					gotAck = true
				}
			}
			assert.Equal(t, filtered, gotAck, "INIT-ACK received")
			if filtered {
				assert.Positive(t, f.Stripped())
			}
		})
	}
}
