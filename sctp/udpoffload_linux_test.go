package sctp

import (
	"encoding/binary"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// groControlForTest is the UDP_GRO control message a read of datagrams of
// seg octets carries.
func groControlForTest(seg int) []byte {
	oob := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level = unix.IPPROTO_UDP
	h.Type = unix.UDP_GRO
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(oob[unix.CmsgLen(0):], uint32(seg))
	return oob
}

func TestGROSegment(t *testing.T) {
	assert.Equal(t, 1452, groSegment(groControlForTest(1452)))
	two := append(groControlForTest(7), groControlForTest(1200)...)
	assert.Equal(t, 7, groSegment(two), "the first UDP_GRO message")
	other := groControlForTest(9)
	(*unix.Cmsghdr)(unsafe.Pointer(&other[0])).Type = unix.UDP_SEGMENT
	assert.Equal(t, 1200, groSegment(append(other, groControlForTest(1200)...)), "another message first")
	assert.Zero(t, groSegment(nil))
	assert.Zero(t, groSegment(groControlForTest(1452)[:unix.CmsgLen(4)-1]), "cut short")
}

// groSegment reads the segment size from whatever control messages a
// read returned, never beyond them; anything malformed reads as one
// datagram (0).
func FuzzGROSegment(f *testing.F) {
	f.Add(groControlForTest(1452))
	f.Add(append(groControlForTest(7), groControlForTest(1200)...))
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, oob []byte) {
		if seg := groSegment(oob); seg != 0 {
			require.GreaterOrEqual(t, len(oob), unix.CmsgLen(4))
		}
	})
}

// A datagram waiting on a UDP socket is seen by the reader's probe
// (SIOCINQ), and none once it is read.
func TestInqProbe(t *testing.T) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer rx.Close()
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	defer tx.Close()
	p := newInqProbe(rx)
	assert.False(t, p.queued(), "nothing sent yet")
	for range 2 {
		_, err = tx.Write([]byte("x"))
		require.NoError(t, err)
	}
	require.Eventually(t, p.queued, 5*time.Second, time.Millisecond)
	b := make([]byte, 16)
	_, err = rx.Read(b)
	require.NoError(t, err)
	assert.True(t, p.queued(), "the second datagram waits")
	_, err = rx.Read(b)
	require.NoError(t, err)
	assert.False(t, p.queued(), "all read")
	assert.False(t, (*inqProbe)(nil).queued(), "no probe: nothing known to wait")
	assert.Zero(t, testing.AllocsPerRun(100, func() { p.queued() }), "a probe allocates nothing")
}

// A dialer's coalesced read (UDP_GRO) with another one already queued
// leaves its SACK to that one, as a listener's worker does (RFC 9260
// §6.2; under load one SACK per two reads). The test holds the
// association's lock while the peer sends one packet and then two runs
// (UDP_SEGMENT, delivered whole over loopback), so both runs wait in the
// socket when the reader comes to the first: no SACK acknowledges the
// first run alone, one acknowledges both.
func TestRFC9260_6_2_DialerQueuedReadsOneSACK(t *testing.T) {
	peer := newRawPeer(t)
	a, tag := establishRaw(t, peer, &Config{Streams: 4})
	a.Start(func(uint16, uint32, []byte) {}, func(error) {})
	gw := newGSOWriter(peer.pc, peer.to.AddrPort())
	require.NotNil(t, gw)
	const seg, n = 1200, 8
	tsn := uint32(100)
	run := func() [][]byte {
		var pkts [][]byte
		for range n {
			p := wire.AppendHeader(nil, wire.Header{SrcPort: peer.port, DstPort: defaultPort, VerificationTag: tag})
			d := wire.Data{TSN: tsn, StreamID: 1, PPID: 16, Unordered: true, Beginning: true, Ending: true,
				UserData: make([]byte, seg-len(p)-wire.DataHeaderLen)}
			tsn++
			p = d.Append(p)
			wire.SetChecksum(p)
			pkts = append(pkts, p)
		}
		return pkts
	}
	a.mu.Lock()
	peer.send(tag, (&wire.Data{TSN: tsn, StreamID: 1, PPID: 16, Unordered: true, Beginning: true, Ending: true, UserData: []byte("first")}).Append(nil))
	tsn++
	first := run()
	endFirst := tsn - 1
	require.NoError(t, gw.writeRun(first, seg))
	require.NoError(t, gw.writeRun(run(), seg))
	end := tsn - 1
	readsBefore := a.stats.offloadRecv
	a.mu.Unlock()

	for {
		_, c := peer.recv(wire.ChunkSACK)
		s, err := wire.ParseSACK(c, nil, nil)
		require.NoError(t, err)
		require.NotEqual(t, endFirst, s.CumTSNAck, "a SACK of the first run alone")
		if s.CumTSNAck == end {
			break
		}
	}
	st := a.Stats()
	require.Equal(t, readsBefore+2, st.OffloadReceives, "each run was one coalesced read")
}
