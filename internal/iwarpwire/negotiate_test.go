package iwarpwire

import (
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNegotiateResponder_RFC6581_9_1 walks the responder rules of §9.1 and
// §9.2.
func TestNegotiateResponder_RFC6581_9_1(t *testing.T) {
	const nn = iwarp.NoNegotiation
	for _, tc := range []struct {
		name      string
		local     iwarp.Depths
		maxIRD    int
		supported iwarp.RTR
		req       iwarp.IRDORD
		reply     iwarp.IRDORD
		d         iwarp.Depths
	}{
		{"equal", iwarp.Depths{IRD: 16, ORD: 16}, 16, 0, iwarp.IRDORD{IRD: 16, ORD: 16}, iwarp.IRDORD{IRD: 16, ORD: 16}, iwarp.Depths{IRD: 16, ORD: 16}},
		// "The responder MUST set its ORD at most to the initiator IRD."
		{"ORD lowered to initiator IRD", iwarp.Depths{IRD: 16, ORD: 16}, 16, 0, iwarp.IRDORD{IRD: 2, ORD: 1}, iwarp.IRDORD{IRD: 16, ORD: 2}, iwarp.Depths{IRD: 16, ORD: 2}},
		// "the responder IRD MAY be increased", up to what it can serve.
		{"IRD raised to initiator ORD", iwarp.Depths{IRD: 2, ORD: 2}, 64, 0, iwarp.IRDORD{IRD: 2, ORD: 32}, iwarp.IRDORD{IRD: 32, ORD: 2}, iwarp.Depths{IRD: 32, ORD: 2}},
		{"IRD raised up to maxIRD", iwarp.Depths{IRD: 2, ORD: 2}, 8, 0, iwarp.IRDORD{IRD: 2, ORD: 32}, iwarp.IRDORD{IRD: 8, ORD: 2}, iwarp.Depths{IRD: 8, ORD: 2}},
		{"no raise when maxIRD below", iwarp.Depths{IRD: 2, ORD: 2}, 0, 0, iwarp.IRDORD{IRD: 2, ORD: 32}, iwarp.IRDORD{IRD: 2, ORD: 2}, iwarp.Depths{IRD: 2, ORD: 2}},
		// "The responder MUST respond to an initiator ORD value of 0x3FFF by
		// leaving its local endpoint IRD value unchanged and setting the
		// IRD to 0x3FFF in its reply message", and likewise for IRD.
		{"initiator ORD 0x3FFF", iwarp.Depths{IRD: 4, ORD: 4}, 64, 0, iwarp.IRDORD{IRD: 8, ORD: nn}, iwarp.IRDORD{IRD: nn, ORD: 4}, iwarp.Depths{IRD: 4, ORD: 4}},
		{"initiator IRD 0x3FFF", iwarp.Depths{IRD: 4, ORD: 4}, 64, 0, iwarp.IRDORD{IRD: nn, ORD: 2}, iwarp.IRDORD{IRD: 4, ORD: nn}, iwarp.Depths{IRD: 4, ORD: 4}},
		{"local 0x3FFF kept", iwarp.Depths{IRD: nn, ORD: nn}, 64, 0, iwarp.IRDORD{IRD: 2, ORD: 2}, iwarp.IRDORD{IRD: nn, ORD: nn}, iwarp.Depths{IRD: nn, ORD: nn}},
		{"zero", iwarp.Depths{IRD: 0, ORD: 0}, 0, 0, iwarp.IRDORD{}, iwarp.IRDORD{}, iwarp.Depths{IRD: 0, ORD: 0}},
		{"clamped", iwarp.Depths{IRD: -1, ORD: 1 << 20}, 0, 0, iwarp.IRDORD{IRD: 8, ORD: 0}, iwarp.IRDORD{IRD: 0, ORD: 8}, iwarp.Depths{IRD: 0, ORD: 8}},
		// §9.2: A echoed, requested options the responder supports.
		{"p2p common subset", iwarp.Depths{IRD: 1, ORD: 1}, 1, iwarp.RTRWrite | iwarp.RTRRead, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRAll, IRD: 1, ORD: 1},
			iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRWrite | iwarp.RTRRead, IRD: 1, ORD: 1}, iwarp.Depths{IRD: 1, ORD: 1}},
		{"p2p Send only with others dropped", iwarp.Depths{IRD: 1, ORD: 1}, 1, 0, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRSend | iwarp.RTRWrite, IRD: 1, ORD: 1},
			iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRWrite, IRD: 1, ORD: 1}, iwarp.Depths{IRD: 1, ORD: 1}},
		{"p2p Send alone kept", iwarp.Depths{IRD: 1, ORD: 1}, 1, iwarp.RTRSend, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRSend, IRD: 1, ORD: 1},
			iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRSend, IRD: 1, ORD: 1}, iwarp.Depths{IRD: 1, ORD: 1}},
		{"p2p none common: offer own", iwarp.Depths{IRD: 1, ORD: 1}, 1, iwarp.RTRRead, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRWrite, IRD: 1, ORD: 1},
			iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRRead, IRD: 1, ORD: 1}, iwarp.Depths{IRD: 1, ORD: 1}},
		// §9.1: "if the initiator ORD is 0 ... and the responder supports
		// use of a zero-length RDMA Read iwarp.RTR indication, then the responder
		// IRD can be set to 1".
		{"Read iwarp.RTR raises IRD 0 to 1", iwarp.Depths{IRD: 0, ORD: 0}, 0, iwarp.RTRRead, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRRead, IRD: 0, ORD: 0},
			iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRRead, IRD: 1, ORD: 0}, iwarp.Depths{IRD: 1, ORD: 0}},
		{"client-server: no iwarp.RTR", iwarp.Depths{IRD: 1, ORD: 1}, 1, iwarp.RTRAll, iwarp.IRDORD{RTR: iwarp.RTRAll, IRD: 1, ORD: 1}, iwarp.IRDORD{IRD: 1, ORD: 1}, iwarp.Depths{IRD: 1, ORD: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply, d := NegotiateResponder(tc.local, tc.maxIRD, tc.supported, tc.req)
			assert.Equal(t, tc.reply, reply)
			assert.Equal(t, tc.d, d)
			assert.NoError(t, reply.Validate())
			// After a successful negotiation: initiator ORD <= responder
			// IRD and responder ORD <= initiator IRD (§9.1), unless a side
			// opted out with 0x3FFF.
			if tc.req.IRD != iwarp.NoNegotiation && d.ORD != iwarp.NoNegotiation {
				assert.LessOrEqual(t, d.ORD, int(tc.req.IRD))
			}
		})
	}
}

// TestNegotiateInitiator_RFC6581_9_1: "the initiator MUST set its IRD at
// least to the responder ORD and its ORD at most to the responder IRD. If
// the initiator does not have sufficient resources for the required IRD,
// it MUST send a TERM message ... Error Code 6."
func TestNegotiateInitiator_RFC6581_9_1(t *testing.T) {
	const nn = iwarp.NoNegotiation
	for _, tc := range []struct {
		name   string
		local  iwarp.Depths
		maxIRD int
		reply  iwarp.IRDORD
		d      iwarp.Depths
		err    error
	}{
		{"equal", iwarp.Depths{IRD: 16, ORD: 16}, 16, iwarp.IRDORD{IRD: 16, ORD: 16}, iwarp.Depths{IRD: 16, ORD: 16}, nil},
		{"ORD lowered to responder IRD", iwarp.Depths{IRD: 16, ORD: 16}, 16, iwarp.IRDORD{IRD: 4, ORD: 2}, iwarp.Depths{IRD: 16, ORD: 4}, nil},
		{"IRD raised to responder ORD", iwarp.Depths{IRD: 2, ORD: 2}, 16, iwarp.IRDORD{IRD: 2, ORD: 8}, iwarp.Depths{IRD: 8, ORD: 2}, nil},
		{"insufficient IRD", iwarp.Depths{IRD: 2, ORD: 2}, 2, iwarp.IRDORD{IRD: 2, ORD: 8}, iwarp.Depths{IRD: 2, ORD: 2}, iwarp.ErrInsufficientIRD},
		{"responder IRD 0x3FFF keeps ORD", iwarp.Depths{IRD: 2, ORD: 5}, 2, iwarp.IRDORD{IRD: nn, ORD: 1}, iwarp.Depths{IRD: 2, ORD: 5}, nil},
		{"responder ORD 0x3FFF keeps IRD", iwarp.Depths{IRD: 2, ORD: 5}, 2, iwarp.IRDORD{IRD: 9, ORD: nn}, iwarp.Depths{IRD: 2, ORD: 5}, nil},
		{"local 0x3FFF kept", iwarp.Depths{IRD: nn, ORD: nn}, 2, iwarp.IRDORD{IRD: 1, ORD: 100}, iwarp.Depths{IRD: nn, ORD: nn}, nil},
		{"responder IRD 0: no Reads", iwarp.Depths{IRD: 4, ORD: 4}, 4, iwarp.IRDORD{IRD: 0, ORD: 0}, iwarp.Depths{IRD: 4, ORD: 0}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NegotiateInitiator(tc.local, tc.maxIRD, tc.reply)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Contains(t, err.Error(), "RFC 6581 §9.1")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.d, d)
		})
	}
}

// TestNegotiateRTR_RFC6581_9_2: the responder must echo A; with the
// peer-to-peer model one option must be common.
func TestNegotiateRTR_RFC6581_9_2(t *testing.T) {
	r, err := NegotiateRTR(iwarp.IRDORD{}, iwarp.IRDORD{})
	require.NoError(t, err)
	assert.Equal(t, iwarp.RTR(0), r)
	r, err = NegotiateRTR(iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRWrite | iwarp.RTRRead}, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRRead | iwarp.RTRSend})
	require.NoError(t, err)
	assert.Equal(t, iwarp.RTRRead, r)
	_, err = NegotiateRTR(iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRWrite}, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRRead})
	assert.ErrorIs(t, err, iwarp.ErrNoMatchingRTR)
	_, err = NegotiateRTR(iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRWrite}, iwarp.IRDORD{RTR: iwarp.RTRWrite})
	assert.ErrorIs(t, err, iwarp.ErrNoMatchingRTR, "A not echoed")
	_, err = NegotiateRTR(iwarp.IRDORD{}, iwarp.IRDORD{PeerToPeer: true})
	assert.ErrorIs(t, err, iwarp.ErrNoMatchingRTR, "A set by a responder asked for client-server")
}

// The two halves agree: whatever the initiator asks, a responder following
// NegotiateResponder never makes a conforming initiator fail, and the §9.1
// relations hold afterwards.
func FuzzNegotiate(f *testing.F) {
	f.Add(uint16(2), uint16(32), 4, 4, 64)
	f.Add(uint16(0x3FFF), uint16(0), 0, 0, 0)
	f.Fuzz(func(t *testing.T, iIRD, iORD uint16, rIRD, rORD, rMax int) {
		req := iwarp.IRDORD{IRD: iIRD & 0x3FFF, ORD: iORD & 0x3FFF}
		reply, rd := NegotiateResponder(iwarp.Depths{IRD: rIRD, ORD: rORD}, rMax, 0, req)
		require.NoError(t, reply.Validate())
		id, err := NegotiateInitiator(iwarp.Depths{IRD: int(req.IRD), ORD: int(req.ORD)}, int(req.IRD), reply)
		require.NoError(t, err, "a conforming responder never asks for more than the initiator IRD")
		if id.ORD != iwarp.NoNegotiation && reply.IRD != iwarp.NoNegotiation {
			require.LessOrEqual(t, id.ORD, rd.IRD, "initiator ORD <= responder IRD")
		}
		if rd.ORD != iwarp.NoNegotiation && req.IRD != iwarp.NoNegotiation {
			require.LessOrEqual(t, rd.ORD, id.IRD, "responder ORD <= initiator IRD")
		}
	})
}
