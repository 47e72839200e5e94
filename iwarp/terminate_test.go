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
		{TermLocalCatastrophic, "RDMA local catastrophic error (0/0/0x00)"},
		{TermInvalidSTag, "RDMA remote protection error: invalid STag (0/1/0x00)"},
		{TermBaseBounds, "RDMA remote protection error: base or bounds violation (0/1/0x01)"},
		{TermAccessRights, "RDMA remote protection error: access rights violation (0/1/0x02)"},
		{TermSTagNotAssociated, "RDMA remote protection error: STag not associated with RDMAP Stream (0/1/0x03)"},
		{TermTOWrap, "RDMA remote protection error: TO wrap (0/1/0x04)"},
		{TermProtectionCannotInvalidate, "RDMA remote protection error: STag cannot be invalidated (0/1/0x09)"},
		{TermProtectionUnspecified, "RDMA remote protection error: unspecified error (0/1/0xff)"},
		{TermInvalidVersion, "RDMA remote operation error: invalid RDMAP version (0/2/0x05)"},
		{TermUnexpectedOpcode, "RDMA remote operation error: unexpected opcode (0/2/0x06)"},
		{TermCatastrophicStream, "RDMA remote operation error: catastrophic error, localized to RDMAP Stream (0/2/0x07)"},
		{termCatastrophicGlobal, "RDMA remote operation error: catastrophic error, global (0/2/0x08)"},
		{TermOperationCannotInvalidate, "RDMA remote operation error: STag cannot be invalidated (0/2/0x09)"},
		{TermOperationUnspecified, "RDMA remote operation error: unspecified error (0/2/0xff)"},
		{TermDDPInvalidSTag, "DDP tagged buffer error: invalid STag (1/1/0x00)"},
		{TermDDPBaseBounds, "DDP tagged buffer error: base or bounds violation (1/1/0x01)"},
		{TermDDPSTagNotAssociated, "DDP tagged buffer error: STag not associated with DDP stream (1/1/0x02)"},
		{TermDDPTOWrap, "DDP tagged buffer error: TO wrap (1/1/0x03)"},
		{TermDDPTaggedVersion, "DDP tagged buffer error: invalid DDP version (1/1/0x04)"},
		{TermDDPInvalidQN, "DDP untagged buffer error: invalid QN (1/2/0x01)"},
		{TermDDPNoBuffer, "DDP untagged buffer error: invalid MSN - no buffer available (1/2/0x02)"},
		{TermDDPMSNRange, "DDP untagged buffer error: invalid MSN - MSN range is not valid (1/2/0x03)"},
		{TermDDPInvalidMO, "DDP untagged buffer error: invalid MO (1/2/0x04)"},
		{TermDDPMessageTooLong, "DDP untagged buffer error: DDP message too long for available buffer (1/2/0x05)"},
		{TermDDPUntaggedVersion, "DDP untagged buffer error: invalid DDP version (1/2/0x06)"},
		{TermDDPLocalCatastrophic, "DDP local catastrophic (1/0/0x00)"},
		{TermCode{Layer: LayerLLP, EType: 0, Code: 6}, "LLP error: insufficient IRD resources (2/0/0x06)"},
		{TermCode{Layer: LayerLLP, EType: 1, Code: 6}, "LLP error (2/1/0x06)"},
		{TermCode{Layer: LayerLLP, EType: 0, Code: 9}, "LLP error (2/0/0x09)"},
		{TermMPACRC, "LLP error: MPA CRC error (2/0/0x02)"},
		{TermCode{Layer: LayerRDMA, EType: 1, Code: 0x42}, "RDMA remote protection error: unknown code (0/1/0x42)"},
		{TermCode{Layer: 9, EType: 9, Code: 9}, "unknown layer (9/9/0x09)"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.c.String())
	}
	assert.True(t, TermTOWrap.isRemoteProtection())
	assert.False(t, TermUnexpectedOpcode.isRemoteProtection())
}

// TestDDPCodes_RFC5041_7_2: every row of the table is valid and named, and
// nothing else is.
func TestDDPCodes_RFC5041_7_2(t *testing.T) {
	rows := []struct {
		t    DDPErrorType
		code uint8
		name string
	}{
		{ddpTypeLocalCatastrophic, 0x00, "local catastrophic"},
		{DDPTypeTagged, 0x00, "invalid STag"},
		{DDPTypeTagged, 0x01, "base or bounds violation"},
		{DDPTypeTagged, 0x02, "STag not associated with DDP stream"},
		{DDPTypeTagged, 0x03, "TO wrap"},
		{DDPTypeTagged, 0x04, "invalid DDP version"},
		{DDPTypeUntagged, 0x01, "invalid QN"},
		{DDPTypeUntagged, 0x02, "invalid MSN - no buffer available"},
		{DDPTypeUntagged, 0x03, "invalid MSN - MSN range is not valid"},
		{DDPTypeUntagged, 0x04, "invalid MO"},
		{DDPTypeUntagged, 0x05, "DDP message too long for available buffer"},
		{DDPTypeUntagged, 0x06, "invalid DDP version"},
	}
	for _, r := range rows {
		assert.Equal(t, r.name, DDPCodeName(r.t, r.code))
		assert.True(t, ValidDDPCode(r.t, r.code))
		assert.Equal(t, TermCode{Layer: LayerDDP, EType: uint8(r.t), Code: r.code}, DDPTermCode(r.t, r.code))
	}
	assert.False(t, ValidDDPCode(ddpTypeLocalCatastrophic, 1))
	assert.False(t, ValidDDPCode(DDPTypeTagged, 5))
	assert.False(t, ValidDDPCode(DDPTypeUntagged, 0))
	assert.False(t, ValidDDPCode(DDPTypeUntagged, 7))
	assert.False(t, ValidDDPCode(ddpTypeLLP, 0), "reserved for the LLP")
	assert.False(t, ValidDDPCode(4, 0))
	assert.Equal(t, "reserved error type 0x9", DDPErrorType(9).String())
	assert.Equal(t, "LLP error", ddpTypeLLP.String())
	assert.Contains(t, DDPCodeName(DDPTypeTagged, 0x77), "unknown")
	assert.Equal(t, "LLP code 0x05", DDPCodeName(ddpTypeLLP, 5))
}

// TestMPACodes_RFC6581_8: the IANA MPA Errors registry, layer 2 type 0.
func TestMPACodes_RFC6581_8(t *testing.T) {
	for code, c := range map[uint8]TermCode{
		1: TermMPAConnectionLost, 2: TermMPACRC, 3: TermMPAMarker, 4: TermMPAInvalidFrame,
		5: TermMPALocalCatastrophic, 6: TermInsufficientIRD, 7: TermNoMatchingRTR,
	} {
		assert.Equal(t, TermCode{Layer: 2, EType: 0, Code: code}, c)
		assert.NotContains(t, c.String(), "LLP error (", "named")
	}
}

// TestTermCodes_OneRowEach: the table has every row of RFC 5040 Figure 9
// (14), RFC 5041 §7.2 (12) and RFC 5044 §8 / RFC 6581 §8 (7), each once, and
// every row is Known and named by String.
func TestTermCodes_OneRowEach(t *testing.T) {
	rows := TermCodes()
	assert.Len(t, rows, 14+12+7)
	seen := map[TermCode]bool{}
	for _, r := range rows {
		assert.False(t, seen[r.Code], "%v twice", r.Code)
		seen[r.Code] = true
		assert.True(t, r.Code.known())
		assert.NotEmpty(t, r.Name)
		assert.NotContains(t, r.Code.String(), "unknown")
	}
	assert.False(t, TermCode{Layer: LayerLLP, EType: 1, Code: 1}.known())
}

func TestTermCode_Pack(t *testing.T) {
	for _, c := range []TermCode{TermLocalCatastrophic, TermOperationUnspecified, TermDDPInvalidMO, TermNoMatchingRTR, {Layer: 0xf, EType: 0xf, Code: 0xff}} {
		assert.Equal(t, c, UnpackTermCode(c.Pack()))
	}
	assert.Equal(t, uint32(0x020007), TermNoMatchingRTR.Pack())
}
