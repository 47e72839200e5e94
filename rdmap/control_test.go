package rdmap

import (
	"errors"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 5040 §4.1 Figure 3: RV in bits 24-25, Rsv 26-27, opcode 28-31 of the
// DDP control word, i.e. the octet RV|Rsv|opcode.
func TestControl_RFC5040_4_1_Figure3(t *testing.T) {
	tests := []struct {
		name string
		in   byte
		want control
		code *iwarp.TermCode
	}{
		{"write", 0x40, control{Version: 1, Opcode: iwarp.RDMAPOpWrite}, nil},
		{"read request", 0x41, control{Version: 1, Opcode: iwarp.RDMAPOpReadRequest}, nil},
		{"read response", 0x42, control{Version: 1, Opcode: iwarp.RDMAPOpReadResponse}, nil},
		{"send", 0x43, control{Version: 1, Opcode: iwarp.RDMAPOpSend}, nil},
		{"send inv", 0x44, control{Version: 1, Opcode: iwarp.RDMAPOpSendInvalidate}, nil},
		{"send se", 0x45, control{Version: 1, Opcode: iwarp.RDMAPOpSendSE}, nil},
		{"send se inv", 0x46, control{Version: 1, Opcode: iwarp.RDMAPOpSendSEInvalidate}, nil},
		{"terminate", 0x47, control{Version: 1, Opcode: iwarp.RDMAPOpTerminate}, nil},
		{"immediate RFC 7306", 0x48, control{Version: 1, Opcode: iwarp.RDMAPOpImmediate}, nil},
		{"immediate se RFC 7306", 0x49, control{Version: 1, Opcode: iwarp.RDMAPOpImmediateSE}, nil},
		{"atomic req RFC 7306", 0x4a, control{Version: 1, Opcode: iwarp.RDMAPOpAtomicRequest}, nil},
		{"atomic resp RFC 7306", 0x4b, control{Version: 1, Opcode: iwarp.RDMAPOpAtomicResponse}, nil},
		{"reserved bits ignored", 0x73, control{Version: 1, Reserved: 3, Opcode: iwarp.RDMAPOpSend}, nil},
		{"reserved opcode 0xC", 0x4c, control{Version: 1, Opcode: 0xc}, &iwarp.Term.UnexpectedOpcode},
		{"reserved opcode 0xF", 0x4f, control{Version: 1, Opcode: 0xf}, &iwarp.Term.UnexpectedOpcode},
		{"RDMAC version 00b", 0x03, control{Version: 0, Opcode: iwarp.RDMAPOpSend}, &iwarp.Term.InvalidVersion},
		{"version 10b", 0x83, control{Version: 2, Opcode: iwarp.RDMAPOpSend}, &iwarp.Term.InvalidVersion},
		{"version 11b", 0xc0, control{Version: 3, Opcode: iwarp.RDMAPOpWrite}, &iwarp.Term.InvalidVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, n, err := parseControl([]byte{tc.in})
			assert.Equal(t, tc.want, c)
			if tc.code != nil {
				var pe *protocolError
				require.True(t, errors.As(err, &pe), "err %v", err)
				assert.Equal(t, *tc.code, pe.Code)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Equal(t, tc.in&^0x30, c.Byte(), "reserved bits are sent as zero")
			assert.Equal(t, []byte{tc.in &^ 0x30}, c.Append(nil))
			assert.Equal(t, controlLen, c.Len())
		})
	}
}

func TestControl_Truncated(t *testing.T) {
	_, _, err := parseControl(nil)
	require.ErrorIs(t, err, errTruncated)
}

// RFC 5040 §4.1 Figure 4 and RFC 7306 §4.1 Figure 2: tagged flag, queue
// number and Invalidate STag validity per opcode. Immediate Data with SE is
// on QN 0 (the RFC text; the draft's table said 1).
func TestOpcode_RFC5040_Figure4_RFC7306_Figure2(t *testing.T) {
	tests := []struct {
		op     opcode
		tagged bool
		qn     int // -1: N/A
		inv    bool
		se     bool
		name   string
	}{
		{iwarp.RDMAPOpWrite, true, -1, false, false, "RDMA Write"},
		{iwarp.RDMAPOpReadRequest, false, 1, false, false, "RDMA Read Request"},
		{iwarp.RDMAPOpReadResponse, true, -1, false, false, "RDMA Read Response"},
		{iwarp.RDMAPOpSend, false, 0, false, false, "Send"},
		{iwarp.RDMAPOpSendInvalidate, false, 0, true, false, "Send with Invalidate"},
		{iwarp.RDMAPOpSendSE, false, 0, false, true, "Send with Solicited Event"},
		{iwarp.RDMAPOpSendSEInvalidate, false, 0, true, true, "Send with Solicited Event and Invalidate"},
		{iwarp.RDMAPOpTerminate, false, 2, false, false, "Terminate"},
		{iwarp.RDMAPOpImmediate, false, 0, false, false, "Immediate Data"},
		{iwarp.RDMAPOpImmediateSE, false, 0, false, true, "Immediate Data with Solicited Event"},
		{iwarp.RDMAPOpAtomicRequest, false, 1, false, false, "Atomic Request"},
		{iwarp.RDMAPOpAtomicResponse, false, 3, false, false, "Atomic Response"},
		{0xc, false, -1, false, false, "reserved opcode 0xc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.tagged, opTagged(tc.op))
			qn, ok := opQN(tc.op)
			if tc.qn < 0 {
				assert.False(t, ok)
			} else {
				assert.True(t, ok)
				assert.Equal(t, uint32(tc.qn), qn)
			}
			assert.Equal(t, tc.inv, iwarpwire.HasInvalidateSTag(tc.op))
			assert.Equal(t, tc.se, opSolicited(tc.op))
			assert.Equal(t, tc.name, tc.op.String())
			assert.Equal(t, tc.op <= iwarp.RDMAPOpAtomicResponse, opValid(tc.op))
			assert.Equal(t, 0x40|byte(tc.op), iwarpwire.RDMAPControlByte(tc.op))
		})
	}
}

func FuzzControl(f *testing.F) {
	for _, b := range []byte{0x40, 0x43, 0x47, 0x4b, 0x4c, 0x03, 0xff} {
		f.Add([]byte{b})
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, n, err := parseControl(b)
		if err != nil {
			return
		}
		require.Equal(t, 1, n)
		require.True(t, opValid(c.Opcode))
		require.Equal(t, b[0]&^0x30, c.Append(nil)[0])
	})
}
