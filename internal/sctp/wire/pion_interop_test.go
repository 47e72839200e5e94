package wire_test

import (
	"net"
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/pion/sctp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// rawPeer is an SCTP endpoint driven by hand, packet by packet, with this
// package, facing a pion/sctp association over an in-memory connection.
type rawPeer struct {
	t       *testing.T
	conn    net.Conn
	pkts    chan []byte
	peerTag uint32 // the Verification Tag pion expects
}

func newRawPeer(t *testing.T, conn net.Conn) *rawPeer {
	p := &rawPeer{t: t, conn: conn, pkts: make(chan []byte, 64)}
	go func() {
		defer close(p.pkts)
		for {
			buf := make([]byte, 1<<16)
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			p.pkts <- buf[:n]
		}
	}()
	return p
}

// send writes one packet holding the chunks the appenders write.
func (p *rawPeer) send(tag uint32, chunks ...func([]byte) []byte) {
	p.t.Helper()
	b := wire.AppendHeader(nil, wire.Header{SrcPort: 5000, DstPort: 5000, VerificationTag: tag})
	for _, c := range chunks {
		b = c(b)
	}
	wire.SetChecksum(b)
	_, err := p.conn.Write(b)
	require.NoError(p.t, err)
}

// expect returns the first chunk of type want pion sends, checking every
// packet on the way: a valid checksum, our Verification Tag, well-formed
// chunks that parse.
func (p *rawPeer) expect(myTag uint32, want wire.ChunkType) wire.Chunk {
	p.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case b, ok := <-p.pkts:
			require.True(p.t, ok, "connection closed waiting for %v", want)
			pkt, err := wire.ParsePacket(b)
			require.NoError(p.t, err, "pion's packet fails the CRC32c or is short")
			assert.Equal(p.t, myTag, pkt.Header.VerificationTag, "RFC 9260 §8.5")
			assert.Equal(p.t, uint16(5000), pkt.Header.SrcPort)
			it := pkt.Chunks()
			var found *wire.Chunk
			for c, ok := it.Next(); ok; c, ok = it.Next() {
				p.t.Logf("pion sent %v (%d octets)", c.Type, c.Len())
				if c.Type == want && found == nil {
					found = &c
				}
			}
			require.NoError(p.t, it.Err())
			if found != nil {
				return *found
			}
		case <-deadline:
			require.FailNow(p.t, "timeout", "waiting for %v", want)
		}
	}
}

// TestPionInterop_RFC9260 runs a whole association between this package,
// driven by hand, and pion/sctp: pion checks our CRC32c and parses every
// chunk we write (INIT, COOKIE ECHO, fragmented DATA, SACK, HEARTBEAT,
// SHUTDOWN, SHUTDOWN COMPLETE), and we parse every chunk pion writes
// (INIT ACK with its parameters, COOKIE ACK, SACK, DATA, HEARTBEAT ACK,
// SHUTDOWN ACK). Handshake §5.1, data §6, heartbeat §8.3, shutdown §9.2.
func TestPionInterop_RFC9260(t *testing.T) {
	defer goleak.VerifyNone(t)
	ours, theirs := net.Pipe()
	p := newRawPeer(t, ours)

	type result struct {
		a   *sctp.Association
		err error
	}
	srv := make(chan result, 1)
	go func() {
		a, err := sctp.Server(sctp.Config{NetConn: theirs, LoggerFactory: logging.NewDefaultLoggerFactory()})
		srv <- result{a, err}
	}()

	const myTag, myTSN = 0x0badcafe, 0xfffffffe // the TSNs wrap during the test
	// INIT (§5.1 A), with the Adaptation Layer Indication of RFC 5043 §5.1.
	initc := wire.Init{InitiateTag: myTag, ARwnd: 1 << 20, OutboundStreams: 16, InboundStreams: 16, InitialTSN: myTSN,
		Params: wire.InitParams{ForwardTSN: true, Extensions: []byte{byte(wire.ChunkForwardTSN), byte(wire.ChunkReconfig)},
			HasAdaptation: true, Adaptation: wire.AdaptationDDP}}
	p.send(0, initc.Append)

	ack, err := wire.ParseInit(p.expect(myTag, wire.ChunkInitAck))
	require.NoError(t, err)
	require.True(t, ack.Ack)
	require.NotEmpty(t, ack.Params.StateCookie)
	assert.NotZero(t, ack.OutboundStreams)
	t.Logf("INIT ACK: tag %#x a_rwnd %d OS %d MIS %d, forward-TSN %v, extensions % x, unrecognized %d",
		ack.InitiateTag, ack.ARwnd, ack.OutboundStreams, ack.InboundStreams, ack.Params.ForwardTSN,
		ack.Params.Extensions, ack.Params.Unrecognized)
	p.peerTag = ack.InitiateTag

	// COOKIE ECHO (§5.1 C) with a copy of the cookie: the packet buffer is
	// the reader's.
	echo := wire.CookieEcho{Cookie: append([]byte(nil), ack.Params.StateCookie...)}
	p.send(p.peerTag, echo.Append)
	p.expect(myTag, wire.ChunkCookieAck)
	r := <-srv
	require.NoError(t, r.err)
	a := r.a

	// A message in two fragments, bundled (B then E, §6.9), on stream 1.
	streamCh := make(chan *sctp.Stream, 1)
	go func() {
		s, err := a.AcceptStream()
		if err == nil {
			streamCh <- s
		}
		close(streamCh)
	}()
	msg := []byte("hello from internal/sctp/wire, in two fragments")
	first := wire.Data{Beginning: true, TSN: myTSN, StreamID: 1, SSN: 0, PPID: 53, UserData: msg[:10]}
	last := wire.Data{Ending: true, TSN: myTSN + 1, StreamID: 1, SSN: 0, PPID: 53, UserData: msg[10:]}
	p.send(p.peerTag, first.Append, last.Append)

	s := <-streamCh
	require.NotNil(t, s)
	buf := make([]byte, 1024)
	n, ppi, err := s.ReadSCTP(buf)
	require.NoError(t, err)
	assert.Equal(t, msg, buf[:n])
	assert.Equal(t, sctp.PayloadTypeWebRTCBinary, ppi)

	sack, err := wire.ParseSACK(p.expect(myTag, wire.ChunkSACK), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, uint32(myTSN+1), sack.CumTSNAck, "both fragments acknowledged")
	assert.Empty(t, sack.Gaps)

	// pion answers with DATA of its own, which we parse and acknowledge.
	_, err = s.WriteSCTP([]byte("pong"), sctp.PayloadTypeWebRTCBinary)
	require.NoError(t, err)
	d, err := wire.ParseData(p.expect(myTag, wire.ChunkData))
	require.NoError(t, err)
	assert.Equal(t, []byte("pong"), d.UserData)
	assert.Equal(t, ack.InitialTSN, d.TSN)
	assert.Equal(t, uint16(1), d.StreamID)
	assert.True(t, d.Beginning && d.Ending)
	p.send(p.peerTag, (&wire.SACK{CumTSNAck: d.TSN, ARwnd: 1 << 20}).Append)

	// HEARTBEAT: the info comes back unchanged (§8.3).
	hb := wire.Heartbeat{Info: []byte("probe 1, an odd length")}
	p.send(p.peerTag, hb.Append)
	hbAck, err := wire.ParseHeartbeat(p.expect(myTag, wire.ChunkHeartbeatAck))
	require.NoError(t, err)
	assert.True(t, hbAck.Ack)
	assert.Equal(t, hb.Info, hbAck.Info)

	// Graceful shutdown (§9.2): SHUTDOWN, SHUTDOWN ACK, SHUTDOWN COMPLETE.
	p.send(p.peerTag, (&wire.Shutdown{CumTSNAck: d.TSN}).Append)
	_, err = wire.ParseShutdownAck(p.expect(myTag, wire.ChunkShutdownAck))
	require.NoError(t, err)
	p.send(p.peerTag, wire.ShutdownComplete{}.Append)

	_, _, err = s.ReadSCTP(buf)
	assert.Error(t, err, "the association is closed")
	require.NoError(t, a.Close())
	require.NoError(t, ours.Close())
	for range p.pkts {
	}
}
