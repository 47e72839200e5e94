package iwarp

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every row of RFC 5040 §4.8 Figure 9 has a readable name.
func TestTermCode_RFC5040_Figure9_Names(t *testing.T) {
	tests := []struct {
		c    TermCode
		want string
	}{
		{Term.LocalCatastrophic, "RDMA local catastrophic error (0/0/0x00)"},
		{Term.InvalidSTag, "RDMA remote protection error: invalid STag (0/1/0x00)"},
		{Term.BaseBounds, "RDMA remote protection error: base or bounds violation (0/1/0x01)"},
		{Term.AccessRights, "RDMA remote protection error: access rights violation (0/1/0x02)"},
		{Term.STagNotAssociated, "RDMA remote protection error: STag not associated with RDMAP Stream (0/1/0x03)"},
		{Term.TOWrap, "RDMA remote protection error: TO wrap (0/1/0x04)"},
		{Term.ProtectionCannotInvalidate, "RDMA remote protection error: STag cannot be invalidated (0/1/0x09)"},
		{Term.ProtectionUnspecified, "RDMA remote protection error: unspecified error (0/1/0xff)"},
		{Term.InvalidVersion, "RDMA remote operation error: invalid RDMAP version (0/2/0x05)"},
		{Term.UnexpectedOpcode, "RDMA remote operation error: unexpected opcode (0/2/0x06)"},
		{Term.CatastrophicStream, "RDMA remote operation error: catastrophic error, localized to RDMAP Stream (0/2/0x07)"},
		{Term.CatastrophicGlobal, "RDMA remote operation error: catastrophic error, global (0/2/0x08)"},
		{Term.OperationCannotInvalidate, "RDMA remote operation error: STag cannot be invalidated (0/2/0x09)"},
		{Term.OperationUnspecified, "RDMA remote operation error: unspecified error (0/2/0xff)"},
		{Term.DDPInvalidSTag, "DDP tagged buffer error: invalid STag (1/1/0x00)"},
		{Term.DDPBaseBounds, "DDP tagged buffer error: base or bounds violation (1/1/0x01)"},
		{Term.DDPSTagNotAssociated, "DDP tagged buffer error: STag not associated with DDP stream (1/1/0x02)"},
		{Term.DDPTOWrap, "DDP tagged buffer error: TO wrap (1/1/0x03)"},
		{Term.DDPTaggedVersion, "DDP tagged buffer error: invalid DDP version (1/1/0x04)"},
		{Term.DDPInvalidQN, "DDP untagged buffer error: invalid QN (1/2/0x01)"},
		{Term.DDPNoBuffer, "DDP untagged buffer error: invalid MSN - no buffer available (1/2/0x02)"},
		{Term.DDPMSNRange, "DDP untagged buffer error: invalid MSN - MSN range is not valid (1/2/0x03)"},
		{Term.DDPInvalidMO, "DDP untagged buffer error: invalid MO (1/2/0x04)"},
		{Term.DDPMessageTooLong, "DDP untagged buffer error: DDP message too long for available buffer (1/2/0x05)"},
		{Term.DDPUntaggedVersion, "DDP untagged buffer error: invalid DDP version (1/2/0x06)"},
		{Term.DDPLocalCatastrophic, "DDP local catastrophic (1/0/0x00)"},
		{TermCode{Layer: LayerLLP, EType: 0, Code: 6}, "LLP error: insufficient IRD resources (2/0/0x06)"},
		{TermCode{Layer: LayerLLP, EType: 1, Code: 6}, "LLP error (2/1/0x06)"},
		{TermCode{Layer: LayerLLP, EType: 0, Code: 9}, "LLP error (2/0/0x09)"},
		{Term.MPACRC, "LLP error: MPA CRC error (2/0/0x02)"},
		{TermCode{Layer: LayerRDMA, EType: 1, Code: 0x42}, "RDMA remote protection error: unknown code (0/1/0x42)"},
		{TermCode{Layer: 9, EType: 9, Code: 9}, "unknown layer (9/9/0x09)"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.c.String())
	}
}

// TestMPACodes_RFC6581_8: the IANA MPA Errors registry, layer 2 type 0.
func TestMPACodes_RFC6581_8(t *testing.T) {
	for code, c := range map[uint8]TermCode{
		1: Term.MPAConnectionLost, 2: Term.MPACRC, 3: Term.MPAMarker, 4: Term.MPAInvalidFrame,
		5: Term.MPALocalCatastrophic, 6: Term.InsufficientIRD, 7: Term.NoMatchingRTR,
	} {
		assert.Equal(t, TermCode{Layer: 2, EType: 0, Code: code}, c)
		assert.NotContains(t, c.String(), "LLP error (", "named")
	}
}

// TestTermCodes_OneRowEach: the table has every row of RFC 5040 Figure 9
// (14), RFC 5041 §7.2 (12) and RFC 5044 §8 / RFC 6581 §8 (7), each once, and
// every row is known and named by String.
func TestTermCodes_OneRowEach(t *testing.T) {
	rows := TermCodes()
	assert.Len(t, rows, 14+12+7)
	seen := map[TermCode]bool{}
	for _, r := range rows {
		assert.False(t, seen[r.Code], "%v twice", r.Code)
		seen[r.Code] = true
		_, known := lookup(r.Code)
		assert.True(t, known)
		assert.NotEmpty(t, r.Name)
		assert.NotContains(t, r.Code.String(), "unknown")
	}
	_, known := lookup(TermCode{Layer: LayerLLP, EType: 1, Code: 1})
	assert.False(t, known)
}

func TestDDPErrorType_String(t *testing.T) {
	assert.Equal(t, "reserved error type 0x9", DDPErrorType(9).String())
	assert.Equal(t, "LLP error", ddpTypeLLP.String())
	assert.Equal(t, "DDP LLP error: LLP code 0x05 (1/3/0x05)", TermCode{Layer: LayerDDP, EType: uint8(ddpTypeLLP), Code: 5}.String())
}
