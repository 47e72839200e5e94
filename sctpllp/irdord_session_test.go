package sctpllp

import (
	"context"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// RFC 6581 §9.2: "If Control Flag A is set to 0, then Control Flags B, C,
// and D MUST also be set to 0. On reception, if Control Flag A is set to 0,
// then Control Flags B, C, and D MUST be ignored." The word is the same
// over SCTP (§7, §9), and neither RFC 6581 nor RFC 5043 adds an SCTP rule
// for the flags: with A = 1 they are negotiated as over MPA.
func TestIRDORD_ClientServerFlags_RFC6581_9_2(t *testing.T) {
	// The word's own encoding is tested in package iwarp; here: an
	// enhanced session control message carrying B or C without A.
	c, _, err := ddpchunk.ParseControl([]byte{0, 0, 0, 6, 0x40, 0x04, 0x80, 0x08, 'x'})
	require.NoError(t, err, "an Enhanced Accept with B or C but not A is accepted")
	assert.Equal(t, iwarp.IRDORD{IRD: 4, ORD: 8}, c.IRDORD)
}

// RFC 6581 §9.2 through the session API over SCTP: an Enhanced Initiate of
// the client-server model carries no RTR flag, the responder's reply
// neither, and the responder echoes A: it MUST set A to 0 when the request
// has A = 0 and to 1 when it has A = 1.
func TestSession_EnhancedControlFlags_RFC6581_9_2(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})

	// Active side: RTR flags without A are not sent.
	go func() {
		m := ft.next(t)
		assert.Equal(t, []byte{0, 0, 0, 5, 0x00, 0x08, 0x00, 0x04}, m.b, "B, C, D zero without A")
		ft.injectCtl(m.sid, ddpchunk.Control{Function: funcEnhancedAccept, IRDORD: iwarp.IRDORD{IRD: 4, ORD: 8}})
	}()
	s, err := a.Open(context.Background(), 1, OpenRequest{Enhanced: true, IRD: 8, ORD: 4, RTR: iwarp.RTRSend | iwarp.RTRWrite | iwarp.RTRRead})
	require.NoError(t, err)
	assert.Equal(t, iwarp.IRDORD{IRD: 8, ORD: 4}, s.Params().LocalIRDORD, "the word as sent")

	// Passive side, client-server request with stray B, C, D: ignored;
	// the reply has A = 0 and no RTR flag.
	ft.fn(2, backend.PPIDControl, []byte{0, 0, 0, 5, 0x40, 0x10, 0xC0, 0x02})
	in := acceptWithin(t, a)
	assert.Equal(t, iwarp.IRDORD{IRD: 16, ORD: 2}, in.IRDORD)
	_, err = in.Accept(AcceptParams{IRD: 2, ORD: 16, PeerToPeer: true})
	assert.ErrorIs(t, err, errConnectionModel, "the responder cannot choose A = 1 (§9.2)")
	ps, err := in.Accept(AcceptParams{IRD: 2, ORD: 16, RTR: iwarp.RTRWrite})
	require.NoError(t, err)
	m := ft.next(t)
	assert.Equal(t, []byte{0, 0, 0, 6, 0x00, 0x02, 0x00, 0x10}, m.b)
	assert.Equal(t, iwarp.IRDORD{IRD: 2, ORD: 16}, ps.Params().LocalIRDORD)

	// Peer-to-peer request: A echoed, the responder's RTR flags sent.
	ft.fn(3, backend.PPIDControl, []byte{0, 0, 0, 5, 0xC0, 0x01, 0x80, 0x01})
	in = acceptWithin(t, a)
	assert.Equal(t, iwarp.IRDORD{PeerToPeer: true, IRD: 1, ORD: 1, RTR: iwarp.RTRSend | iwarp.RTRWrite}, in.IRDORD)
	_, err = in.Accept(AcceptParams{IRD: 1, ORD: 1, RTR: iwarp.RTRWrite})
	require.NoError(t, err)
	m = ft.next(t)
	assert.Equal(t, []byte{0, 0, 0, 6, 0x80, 0x01, 0x80, 0x01}, m.b)
}
