package pion

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// TestRtxCounter_RFC9260_6_3_3: a DATA chunk whose TSN is not above the
// highest written before counts as a retransmission, whatever else the
// packet bundles, across TSN wrap-around (RFC 9260 §1.6).
func TestRtxCounter_RFC9260_6_3_3(t *testing.T) {
	pkt := func(tsns ...uint32) []byte {
		b := wire.AppendHeader(nil, wire.Header{SrcPort: 1, DstPort: 2, VerificationTag: 3})
		b = (&wire.SACK{CumTSNAck: 1, ARwnd: 1000}).Append(b)
		for _, tsn := range tsns {
			b = (&wire.Data{TSN: tsn, Unordered: true, PPID: 16, UserData: []byte("x")}).Append(b)
		}
		return b
	}
	var r rtxCounter
	r.observe(pkt(0xfffffffe, 0xffffffff))
	r.observe(pkt(0, 1))
	assert.Zero(t, r.count())
	r.observe(pkt(0xffffffff)) // T3-rtx of one chunk
	r.observe(pkt(1, 2))       // 1 again, 2 new
	r.observe(pkt())           // a SACK alone
	r.observe([]byte{1, 2, 3}) // garbage is ignored
	assert.Equal(t, uint64(2), r.count())
	p := pkt(9)
	assert.Zero(t, testing.AllocsPerRun(100, func() { r.observe(p) }))
}
