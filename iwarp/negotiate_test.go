package iwarp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNegotiateResponder_RFC6581_9_1 walks the responder rules of §9.1 and
// §9.2.
func TestNegotiateResponder_RFC6581_9_1(t *testing.T) {
	const nn = NoNegotiation
	for _, tc := range []struct {
		name      string
		local     Depths
		maxIRD    int
		supported RTR
		req       IRDORD
		reply     IRDORD
		d         Depths
	}{
		{"equal", Depths{16, 16}, 16, 0, IRDORD{IRD: 16, ORD: 16}, IRDORD{IRD: 16, ORD: 16}, Depths{16, 16}},
		// "The responder MUST set its ORD at most to the initiator IRD."
		{"ORD lowered to initiator IRD", Depths{16, 16}, 16, 0, IRDORD{IRD: 2, ORD: 1}, IRDORD{IRD: 16, ORD: 2}, Depths{16, 2}},
		// "the responder IRD MAY be increased", up to what it can serve.
		{"IRD raised to initiator ORD", Depths{2, 2}, 64, 0, IRDORD{IRD: 2, ORD: 32}, IRDORD{IRD: 32, ORD: 2}, Depths{32, 2}},
		{"IRD raised up to maxIRD", Depths{2, 2}, 8, 0, IRDORD{IRD: 2, ORD: 32}, IRDORD{IRD: 8, ORD: 2}, Depths{8, 2}},
		{"no raise when maxIRD below", Depths{2, 2}, 0, 0, IRDORD{IRD: 2, ORD: 32}, IRDORD{IRD: 2, ORD: 2}, Depths{2, 2}},
		// "The responder MUST respond to an initiator ORD value of 0x3FFF by
		// leaving its local endpoint IRD value unchanged and setting the
		// IRD to 0x3FFF in its reply message", and likewise for IRD.
		{"initiator ORD 0x3FFF", Depths{4, 4}, 64, 0, IRDORD{IRD: 8, ORD: nn}, IRDORD{IRD: nn, ORD: 4}, Depths{4, 4}},
		{"initiator IRD 0x3FFF", Depths{4, 4}, 64, 0, IRDORD{IRD: nn, ORD: 2}, IRDORD{IRD: 4, ORD: nn}, Depths{4, 4}},
		{"local 0x3FFF kept", Depths{nn, nn}, 64, 0, IRDORD{IRD: 2, ORD: 2}, IRDORD{IRD: nn, ORD: nn}, Depths{nn, nn}},
		{"zero", Depths{0, 0}, 0, 0, IRDORD{}, IRDORD{}, Depths{0, 0}},
		{"clamped", Depths{-1, 1 << 20}, 0, 0, IRDORD{IRD: 8, ORD: 0}, IRDORD{IRD: 0, ORD: 8}, Depths{0, 8}},
		// §9.2: A echoed, requested options the responder supports.
		{"p2p common subset", Depths{1, 1}, 1, RTRWrite | RTRRead, IRDORD{PeerToPeer: true, RTR: RTRAll, IRD: 1, ORD: 1},
			IRDORD{PeerToPeer: true, RTR: RTRWrite | RTRRead, IRD: 1, ORD: 1}, Depths{1, 1}},
		{"p2p Send only with others dropped", Depths{1, 1}, 1, 0, IRDORD{PeerToPeer: true, RTR: RTRSend | RTRWrite, IRD: 1, ORD: 1},
			IRDORD{PeerToPeer: true, RTR: RTRWrite, IRD: 1, ORD: 1}, Depths{1, 1}},
		{"p2p Send alone kept", Depths{1, 1}, 1, RTRSend, IRDORD{PeerToPeer: true, RTR: RTRSend, IRD: 1, ORD: 1},
			IRDORD{PeerToPeer: true, RTR: RTRSend, IRD: 1, ORD: 1}, Depths{1, 1}},
		{"p2p none common: offer own", Depths{1, 1}, 1, RTRRead, IRDORD{PeerToPeer: true, RTR: RTRWrite, IRD: 1, ORD: 1},
			IRDORD{PeerToPeer: true, RTR: RTRRead, IRD: 1, ORD: 1}, Depths{1, 1}},
		// §9.1: "if the initiator ORD is 0 ... and the responder supports
		// use of a zero-length RDMA Read RTR indication, then the responder
		// IRD can be set to 1".
		{"Read RTR raises IRD 0 to 1", Depths{0, 0}, 0, RTRRead, IRDORD{PeerToPeer: true, RTR: RTRRead, IRD: 0, ORD: 0},
			IRDORD{PeerToPeer: true, RTR: RTRRead, IRD: 1, ORD: 0}, Depths{1, 0}},
		{"client-server: no RTR", Depths{1, 1}, 1, RTRAll, IRDORD{RTR: RTRAll, IRD: 1, ORD: 1}, IRDORD{IRD: 1, ORD: 1}, Depths{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply, d := NegotiateResponder(tc.local, tc.maxIRD, tc.supported, tc.req)
			assert.Equal(t, tc.reply, reply)
			assert.Equal(t, tc.d, d)
			assert.NoError(t, reply.Validate())
			// After a successful negotiation: initiator ORD <= responder
			// IRD and responder ORD <= initiator IRD (§9.1), unless a side
			// opted out with 0x3FFF.
			if tc.req.IRD != NoNegotiation && d.ORD != NoNegotiation {
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
	const nn = NoNegotiation
	for _, tc := range []struct {
		name   string
		local  Depths
		maxIRD int
		reply  IRDORD
		d      Depths
		err    error
	}{
		{"equal", Depths{16, 16}, 16, IRDORD{IRD: 16, ORD: 16}, Depths{16, 16}, nil},
		{"ORD lowered to responder IRD", Depths{16, 16}, 16, IRDORD{IRD: 4, ORD: 2}, Depths{16, 4}, nil},
		{"IRD raised to responder ORD", Depths{2, 2}, 16, IRDORD{IRD: 2, ORD: 8}, Depths{8, 2}, nil},
		{"insufficient IRD", Depths{2, 2}, 2, IRDORD{IRD: 2, ORD: 8}, Depths{2, 2}, ErrInsufficientIRD},
		{"responder IRD 0x3FFF keeps ORD", Depths{2, 5}, 2, IRDORD{IRD: nn, ORD: 1}, Depths{2, 5}, nil},
		{"responder ORD 0x3FFF keeps IRD", Depths{2, 5}, 2, IRDORD{IRD: 9, ORD: nn}, Depths{2, 5}, nil},
		{"local 0x3FFF kept", Depths{nn, nn}, 2, IRDORD{IRD: 1, ORD: 100}, Depths{nn, nn}, nil},
		{"responder IRD 0: no Reads", Depths{4, 4}, 4, IRDORD{IRD: 0, ORD: 0}, Depths{4, 0}, nil},
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
	r, err := NegotiateRTR(IRDORD{}, IRDORD{})
	require.NoError(t, err)
	assert.Equal(t, RTR(0), r)
	r, err = NegotiateRTR(IRDORD{PeerToPeer: true, RTR: RTRWrite | RTRRead}, IRDORD{PeerToPeer: true, RTR: RTRRead | RTRSend})
	require.NoError(t, err)
	assert.Equal(t, RTRRead, r)
	_, err = NegotiateRTR(IRDORD{PeerToPeer: true, RTR: RTRWrite}, IRDORD{PeerToPeer: true, RTR: RTRRead})
	assert.ErrorIs(t, err, ErrNoMatchingRTR)
	_, err = NegotiateRTR(IRDORD{PeerToPeer: true, RTR: RTRWrite}, IRDORD{RTR: RTRWrite})
	assert.ErrorIs(t, err, ErrNoMatchingRTR, "A not echoed")
	_, err = NegotiateRTR(IRDORD{}, IRDORD{PeerToPeer: true})
	assert.ErrorIs(t, err, ErrNoMatchingRTR, "A set by a responder asked for client-server")
}

// The two halves agree: whatever the initiator asks, a responder following
// NegotiateResponder never makes a conforming initiator fail, and the §9.1
// relations hold afterwards.
func FuzzNegotiate(f *testing.F) {
	f.Add(uint16(2), uint16(32), 4, 4, 64)
	f.Add(uint16(0x3FFF), uint16(0), 0, 0, 0)
	f.Fuzz(func(t *testing.T, iIRD, iORD uint16, rIRD, rORD, rMax int) {
		req := IRDORD{IRD: iIRD & 0x3FFF, ORD: iORD & 0x3FFF}
		reply, rd := NegotiateResponder(Depths{rIRD, rORD}, rMax, 0, req)
		require.NoError(t, reply.Validate())
		id, err := NegotiateInitiator(Depths{int(req.IRD), int(req.ORD)}, int(req.IRD), reply)
		require.NoError(t, err, "a conforming responder never asks for more than the initiator IRD")
		if id.ORD != NoNegotiation && reply.IRD != NoNegotiation {
			require.LessOrEqual(t, id.ORD, rd.IRD, "initiator ORD <= responder IRD")
		}
		if rd.ORD != NoNegotiation && req.IRD != NoNegotiation {
			require.LessOrEqual(t, rd.ORD, id.IRD, "responder ORD <= initiator IRD")
		}
	})
}
