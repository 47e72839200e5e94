package sctp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/handshake"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

const (
	fuzzLocalTag = 0x11111111
	fuzzPeerTag  = 0x22222222
	fuzzPeerTSN  = 5000
)

// fuzzAssociation returns an ESTABLISHED association with no socket (its
// packets go nowhere) and a fragmented message outstanding, so that SACKs
// have something to acknowledge.
func fuzzAssociation(t testing.TB) *Association {
	cfg := Config{Streams: 16, HeartbeatInterval: -1}.normalized()
	a := newAssociation(cfg, func([]byte) error { return nil }, nil, nil, 1500-28)
	a.tcb.localPort, a.tcb.peerPort = defaultPort, defaultPort
	a.tcb.localTag, a.tcb.localInitialTSN = fuzzLocalTag, 1000
	a.mu.Lock()
	a.adoptPeer(fuzzPeerTag, fuzzPeerTSN, 1<<20, 16, 16, wire.AdaptationDDP, true, true, false)
	a.establish(time.Now())
	a.mu.Unlock()
	a.Start(func(uint16, uint32, []byte) {}, func(error) {})
	require.NoError(t, a.WriteMsg(1, 16, make([]byte, 4000)))
	return a
}

// fuzzPacket makes chunks into a packet of the association: the right
// tag and checksum, so that every chunk is processed.
func fuzzPacket(chunks []byte) []byte {
	b := wire.AppendHeader(nil, wire.Header{SrcPort: defaultPort, DstPort: defaultPort, VerificationTag: fuzzLocalTag})
	b = append(b, chunks...)
	wire.SetChecksum(b)
	return b
}

func fuzzSeeds() [][]byte {
	data := func(tsn uint32, flags string) []byte {
		d := wire.Data{TSN: tsn, StreamID: 2, PPID: 16, Unordered: true, Beginning: flags[0] == 'B', Ending: flags[1] == 'E', UserData: []byte("user data")}
		return d.Append(nil)
	}
	sack := (&wire.SACK{CumTSNAck: 1000, ARwnd: 1 << 20, Gaps: []wire.GapAckBlock{{Start: 2, End: 2}}, Dups: []uint32{999}}).Append(nil)
	return [][]byte{
		data(fuzzPeerTSN, "BE"),
		append(data(fuzzPeerTSN+1, "B-"), data(fuzzPeerTSN+2, "-E")...),
		append(append([]byte(nil), sack...), data(fuzzPeerTSN, "BE")...),
		(&wire.SACK{CumTSNAck: 1002, ARwnd: 0}).Append(nil),
		(&wire.Heartbeat{Info: []byte("0123456789abcdef")}).Append(nil),
		(&wire.Shutdown{CumTSNAck: 1002}).Append(nil),
		wire.ShutdownAck{}.Append(nil),
		(&wire.Abort{Causes: wire.AppendCause(nil, wire.CauseUserInitiatedAbort, []byte("bye"))}).Append(nil),
		(&wire.ErrorChunk{Causes: wire.AppendCauseStaleCookie(nil, 10)}).Append(nil),
		wire.AppendReconfigResponses(nil, wire.ReconfigResponse{SeqNum: 1}),
		wire.AppendOutgoingSSNReset(nil, fuzzPeerTSN, 0, fuzzPeerTSN, []byte{0, 2}),
		incomingReset(fuzzPeerTSN, 1, 2),
		append((&wire.Data{TSN: fuzzPeerTSN, StreamID: 3, SSN: 0, PPID: 51, Beginning: true, UserData: []byte("ordered")}).Append(nil),
			wire.AppendOutgoingSSNReset(nil, fuzzPeerTSN, 0, fuzzPeerTSN, nil)...),
		append((&wire.Init{InitiateTag: 7, ARwnd: 1 << 16, OutboundStreams: 1, InboundStreams: 1, InitialTSN: 1}).Append(nil), sack...),
		wire.ShutdownComplete{T: true}.Append(nil),
		(&wire.Abort{T: true}).Append(nil),
		(&wire.CookieEcho{Cookie: make([]byte, handshake.CookieLen)}).Append(nil),
		(&wire.CookieEcho{Cookie: make([]byte, handshake.MaxCookieLen)}).Append(nil),
		{0xbf, 0, 0, 5, 0xaa, 0, 0, 0},
	}
}

// FuzzAssociationReceive feeds two arbitrary packets to an established
// association: nothing may panic, whatever the chunks, and the
// association stays consistent (a packet either is taken or ends it with
// an ABORT, never a crash). Bad input from a peer gets what RFC 9260
// prescribes (ABORT, ERROR, or silence) and nothing else.
func FuzzAssociationReceive(f *testing.F) {
	seeds := fuzzSeeds()
	for i, s := range seeds {
		f.Add(s, seeds[(i+1)%len(seeds)])
	}
	f.Fuzz(func(t *testing.T, p1, p2 []byte) {
		a := fuzzAssociation(t)
		a.receive(fuzzPacket(p1), nil)
		a.receive(fuzzPacket(p2), nil)
		st := a.Stats()
		require.GreaterOrEqual(t, st.Flight, 0)
		require.NoError(t, a.Abort())
		<-a.Done()
	})
}

// TestAssociationReceiveSeeds runs the fuzz seeds in every order of two.
func TestAssociationReceiveSeeds(t *testing.T) {
	seeds := fuzzSeeds()
	for _, s1 := range seeds {
		for _, s2 := range seeds {
			a := fuzzAssociation(t)
			a.receive(fuzzPacket(s1), nil)
			a.receive(fuzzPacket(s2), nil)
			require.NoError(t, a.Abort())
			<-a.Done()
		}
	}
}
