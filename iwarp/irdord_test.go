package iwarp

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRTR_String(t *testing.T) {
	assert.Equal(t, "send|write|read", RTRAll.String())
	assert.Equal(t, "none", RTR(0).String())
	assert.Equal(t, "write|0x10", (RTRWrite | 0x10).String())
	assert.Equal(t, "IRD 1 ORD 2 p2p rtr=read", IRDORD{PeerToPeer: true, RTR: RTRRead, IRD: 1, ORD: 2}.String())
	assert.Equal(t, "IRD 1 ORD 2", IRDORD{IRD: 1, ORD: 2}.String())
}

// TestIRDORD_Validate: IRD and ORD must fit the 14 bits of RFC 6581 §9.
func TestIRDORD_Validate(t *testing.T) {
	assert.ErrorIs(t, IRDORD{ORD: 0x4000}.Validate(), ErrInvalidIRDORD)
	assert.ErrorIs(t, IRDORD{IRD: 0x4000}.Validate(), ErrInvalidIRDORD)
	assert.NoError(t, IRDORD{IRD: NoNegotiation, ORD: MaxIRD}.Validate())
}
