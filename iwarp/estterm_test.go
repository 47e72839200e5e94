package iwarp_test

import (
	"testing"

	"github.com/sctp-rdma/sctp-rdma/ddp"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEstablishmentTerminate_ParsesAsRDMAP: the connection manager's
// Terminate is, octet for octet, what the DDP and RDMAP parsers expect of
// the first message on queue 2 (RFC 5041 §4.3, RFC 5040 §4.1, §4.8).
func TestEstablishmentTerminate_ParsesAsRDMAP(t *testing.T) {
	for _, code := range []iwarp.TermCode{iwarp.TermInsufficientIRD, iwarp.TermNoMatchingRTR, iwarp.TermMPALocalCatastrophic} {
		b := iwarp.AppendEstablishmentTerminate(nil, code)
		require.Len(t, b, iwarp.EstablishmentTerminateLen)
		h, n, err := ddp.ParseUntaggedHeader(b)
		require.NoError(t, err)
		assert.True(t, h.Last)
		assert.Equal(t, uint32(iwarp.RDMAPQNTerminate), h.QN)
		assert.Equal(t, uint32(1), h.MSN, "RFC 5041 §4.3: the first MSN is one")
		assert.Equal(t, uint32(0), h.MO)
		assert.Equal(t, byte(0x47), h.RsvdULP[0], "RDMAP RV 01b, opcode Terminate")
		require.Len(t, b[n:], iwarp.TerminateControlLen, "the Terminate Control field alone")
		got, m, d, r := iwarp.DecodeTerminateControl(b[n:])
		assert.Equal(t, code, got)
		assert.False(t, m || d || r)
	}
	assert.Zero(t, testing.AllocsPerRun(10, func() {
		var buf [iwarp.EstablishmentTerminateLen]byte
		_ = iwarp.AppendEstablishmentTerminate(buf[:0], iwarp.TermNoMatchingRTR)
	}))
}
