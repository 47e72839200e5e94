package iwarpwire

import (
	"testing"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
)

// TestDDPCodes_RFC5041_7_2: every row of the table is valid and named, and
// nothing else is.
func TestDDPCodes_RFC5041_7_2(t *testing.T) {
	rows := []struct {
		t    iwarp.DDPErrorType
		code uint8
		name string
	}{
		{iwarp.DDPErrorType(0), 0x00, "local catastrophic"},
		{iwarp.DDPTypeTagged, 0x00, "invalid STag"},
		{iwarp.DDPTypeTagged, 0x01, "base or bounds violation"},
		{iwarp.DDPTypeTagged, 0x02, "STag not associated with DDP stream"},
		{iwarp.DDPTypeTagged, 0x03, "TO wrap"},
		{iwarp.DDPTypeTagged, 0x04, "invalid DDP version"},
		{iwarp.DDPTypeUntagged, 0x01, "invalid QN"},
		{iwarp.DDPTypeUntagged, 0x02, "invalid MSN - no buffer available"},
		{iwarp.DDPTypeUntagged, 0x03, "invalid MSN - MSN range is not valid"},
		{iwarp.DDPTypeUntagged, 0x04, "invalid MO"},
		{iwarp.DDPTypeUntagged, 0x05, "DDP message too long for available buffer"},
		{iwarp.DDPTypeUntagged, 0x06, "invalid DDP version"},
	}
	for _, r := range rows {
		assert.Equal(t, r.name, DDPCodeName(r.t, r.code))
		assert.True(t, ValidDDPCode(r.t, r.code))
		assert.Equal(t, iwarp.TermCode{Layer: iwarp.LayerDDP, EType: uint8(r.t), Code: r.code}, DDPTermCode(r.t, r.code))
	}
	assert.False(t, ValidDDPCode(iwarp.DDPErrorType(0), 1))
	assert.False(t, ValidDDPCode(iwarp.DDPTypeTagged, 5))
	assert.False(t, ValidDDPCode(iwarp.DDPTypeUntagged, 0))
	assert.False(t, ValidDDPCode(iwarp.DDPTypeUntagged, 7))
	assert.False(t, ValidDDPCode(iwarp.DDPErrorType(3), 0), "reserved for the LLP")
	assert.False(t, ValidDDPCode(4, 0))
	assert.Contains(t, DDPCodeName(iwarp.DDPTypeTagged, 0x77), "unknown")
	assert.Equal(t, "unknown code 0x05", DDPCodeName(iwarp.DDPErrorType(3), 5))
}

func TestTermCode_Pack(t *testing.T) {
	for _, c := range []iwarp.TermCode{iwarp.Term.LocalCatastrophic, iwarp.Term.OperationUnspecified, iwarp.Term.DDPInvalidMO, iwarp.Term.NoMatchingRTR, {Layer: 0xf, EType: 0xf, Code: 0xff}} {
		assert.Equal(t, c, UnpackTermCode(PackTermCode(c)))
	}
	assert.Equal(t, uint32(0x020007), PackTermCode(iwarp.Term.NoMatchingRTR))
}
