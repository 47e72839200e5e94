package iwarpwire_test

import (
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEstablishmentTerminate_ParsesAsRDMAP: the connection manager's
// Terminate is, octet for octet, what the DDP and RDMAP parsers expect of
// the first message on queue 2 (RFC 5041 §4.3, RFC 5040 §4.1, §4.8).
func TestEstablishmentTerminate_ParsesAsRDMAP(t *testing.T) {
	for _, code := range []iwarp.TermCode{iwarp.Term.InsufficientIRD, iwarp.Term.NoMatchingRTR, iwarp.Term.MPALocalCatastrophic} {
		b := iwarpwire.AppendEstablishmentTerminate(nil, code)
		require.Len(t, b, iwarpwire.EstablishmentTerminateLen)
		h, n, err := iwarpwire.ParseDDPUntaggedHeader(b)
		require.NoError(t, err)
		assert.True(t, h.Last)
		assert.Equal(t, uint32(iwarpwire.RDMAPQNTerminate), h.QN)
		assert.Equal(t, uint32(1), h.MSN, "RFC 5041 §4.3: the first MSN is one")
		assert.Equal(t, uint32(0), h.MO)
		assert.Equal(t, byte(0x47), h.RsvdULP[0], "RDMAP RV 01b, opcode Terminate")
		require.GreaterOrEqual(t, len(b[n:]), iwarpwire.TerminateControlLen)
		got, m, d, r := iwarpwire.DecodeTerminateControl(b[n:])
		assert.Equal(t, code, got)
		assert.False(t, m || d || r)
	}
	assert.Zero(t, testing.AllocsPerRun(10, func() {
		var buf [iwarpwire.EstablishmentTerminateLen]byte
		_ = iwarpwire.AppendEstablishmentTerminate(buf[:0], iwarp.Term.NoMatchingRTR)
	}))
}
