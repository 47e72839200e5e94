package siw

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
)

// rpingPcap is a capture of Linux siw on both ends of rping (a copy of the
// project's spec/captures/rping-siw.pcap): server port 7174, enhanced MPA
// revision 2, no CRC, no Markers, rping -C 3 with 64-octet buffers.
const rpingPcap = "testdata/rping-siw.pcap"

// rpingStallPcap is the connection of a failed run of our rping client
// against siw's rping -s (scenario ours-client-vs-rping-s/rev2-enhanced-
// nocrc, server port 7102), captured with siwcap in the siw VM: siw
// sent its MPA Reply, acknowledged our first FPDU, then nothing, no
// Terminate and no FIN, until our client gave up (TCP keepalive probes,
// then our RST). docs/siw-interop.md (open questions) has the timeline.
const rpingStallPcap = "testdata/rping-siw-stall.pcap"

// tcpPayloads returns the reassembled TCP payload of each direction of a
// little-endian Ethernet pcap, keyed by source port (one connection per
// capture; tcpFlows keys by both ports).
func tcpPayloads(t *testing.T, path string) map[uint16][]byte {
	t.Helper()
	out := map[uint16][]byte{}
	for k, b := range tcpFlows(t, path) {
		out[k[0]] = append(out[k[0]], b...)
	}
	return out
}

// ulpdus skips the MPA startup frame and returns the DDP segments.
func ulpdus(t *testing.T, b []byte) [][]byte {
	t.Helper()
	n, err := mpa.FrameLen(b)
	require.NoError(t, err)
	b = b[n:]
	var out [][]byte
	for pos := uint64(0); len(b) > 0; {
		f, m, err := mpa.ParseFPDU(b, pos, false, false, nil)
		require.NoError(t, err)
		out = append(out, f.ULPDU)
		b, pos = b[m:], pos+uint64(m)
	}
	return out
}

// TestCapture_RpingExchange checks our reading of rping's protocol against
// what siw put on the wire: the client's first Send is a 16-octet
// advertisement, which the server's first RDMA Read Request (RFC 5040
// §4.4) names as its source; the server's Sends are 16 octets too.
func TestCapture_RpingExchange(t *testing.T) {
	streams := tcpPayloads(t, rpingPcap)
	require.Len(t, streams, 2)
	srv := ulpdus(t, streams[7174])
	var cli [][]byte
	for port, b := range streams {
		if port != 7174 {
			cli = ulpdus(t, b)
		}
	}
	require.NotEmpty(t, cli)
	require.NotEmpty(t, srv)

	h, n, err := iwarpwire.ParseDDPUntaggedHeader(cli[0])
	require.NoError(t, err)
	assert.Equal(t, iwarpwire.RDMAPControlByte(iwarp.RDMAPOpSend), h.RsvdULP[0])
	assert.Equal(t, uint32(1), h.MSN)
	adv, _, err := ParseInfo(cli[0][n:])
	require.NoError(t, err)
	assert.Equal(t, uint32(DefaultSize), adv.Size)

	h, n, err = iwarpwire.ParseDDPUntaggedHeader(srv[0])
	require.NoError(t, err)
	assert.Equal(t, uint32(iwarpwire.RDMAPQNReadRequest), h.QN)
	rr, err := parseReadRequest(srv[0][n:])
	require.NoError(t, err)
	assert.Equal(t, adv.STag, rr.SrcSTag)
	assert.Equal(t, adv.Addr, rr.SrcTO)
	assert.Equal(t, adv.Size, rr.Size)

	// The client's Read Responses carry rping's payload of each ping.
	ping := 0
	for _, seg := range cli {
		if seg[0]&0x80 == 0 {
			continue
		}
		th, n, err := iwarpwire.ParseDDPTaggedHeader(seg)
		require.NoError(t, err)
		if th.RsvdULP != iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadResponse) {
			continue
		}
		want := make([]byte, DefaultSize)
		FillPing(want, ping)
		assert.Equal(t, string(want), string(seg[n:]), "ping %d", ping)
		ping++
	}
	assert.Equal(t, 3, ping)

	// Every Send either way carries exactly InfoLen octets.
	sends := 0
	for _, seg := range append(append([][]byte{}, cli...), srv...) {
		if seg[0]&0x80 != 0 {
			continue
		}
		h, n, err := iwarpwire.ParseDDPUntaggedHeader(seg)
		require.NoError(t, err)
		if h.QN == iwarpwire.RDMAPQNSend {
			sends++
			assert.Len(t, seg[n:], InfoLen)
		}
	}
	assert.Equal(t, 3*4, sends, "rping -C 3: four Sends per iteration")
}

// TestCapture_SiwStallsAfterItsReply pins down what the wire shows when
// siw's rping server stalls: our client's side is the MPA Request and
// rping's first message (the 16-octet advertisement Send, RFC 5040 §4.6),
// which siw's TCP acknowledged; siw's side is its MPA Reply and nothing
// after it. Our client did what RFC 5044 §7.1.2 allows (an Initiator may
// send once it has the Reply), so the lost Send is siw's: siw_accept
// (Linux 6.1 siw_cm.c) sends its Reply before it installs the QP's
// data-ready callback, and an FPDU arriving in between meets the
// connection manager's callback, which ignores data in RDMA mode.
func TestCapture_SiwStallsAfterItsReply(t *testing.T) {
	streams := tcpPayloads(t, rpingStallPcap)
	require.Len(t, streams, 2)
	srv, ok := streams[7102]
	require.True(t, ok)
	rep, n, err := mpa.ParseFrame(srv)
	require.NoError(t, err)
	assert.True(t, rep.Reply)
	assert.True(t, rep.Enhanced)
	assert.False(t, rep.Reject)
	assert.Equal(t, len(srv), n, "siw sent its MPA Reply and nothing after it")

	var cli []byte
	for port, b := range streams {
		if port != 7102 {
			cli = b
		}
	}
	req, _, err := mpa.ParseFrame(cli)
	require.NoError(t, err)
	assert.False(t, req.Reply)
	us := ulpdus(t, cli)
	require.Len(t, us, 1, "our client sent its first message and waited for the server's")
	h, hn, err := iwarpwire.ParseDDPUntaggedHeader(us[0])
	require.NoError(t, err)
	assert.Equal(t, iwarpwire.RDMAPControlByte(iwarp.RDMAPOpSend), h.RsvdULP[0])
	assert.Equal(t, uint32(iwarpwire.RDMAPQNSend), h.QN)
	assert.Equal(t, uint32(1), h.MSN)
	_, _, err = ParseInfo(us[0][hn:])
	require.NoError(t, err, "rping's advertisement")
}

// readRequest is the RDMA Read Request Header (RFC 5040 §4.4 Figure 6),
// decoded here to check what siw put on the wire.
type readRequest struct {
	SinkSTag, Size, SrcSTag uint32
	SinkTO, SrcTO           uint64
}

func parseReadRequest(b []byte) (readRequest, error) {
	if len(b) < 28 {
		return readRequest{}, fmt.Errorf("RDMA Read Request header: %d octets, want 28", len(b))
	}
	be := binary.BigEndian
	return readRequest{SinkSTag: be.Uint32(b[0:]), SinkTO: be.Uint64(b[4:]), Size: be.Uint32(b[12:]),
		SrcSTag: be.Uint32(b[16:]), SrcTO: be.Uint64(b[20:])}, nil
}
