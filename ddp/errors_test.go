package ddp

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every row of RFC 5041 §7.2 with its value and name.
func TestErrorNumbers_RFC5041_7_2(t *testing.T) {
	rows := []struct {
		proto *iwarpwire.DDPError
		typ   iwarp.DDPErrorType
		code  uint8
		name  string
	}{
		{errLocalCatastrophic, 0x0, 0x00, "local catastrophic"},
		{errInvalidSTag, 0x1, 0x00, "invalid STag"},
		{errBaseBounds, 0x1, 0x01, "base or bounds violation"},
		{errSTagNotAssociated, 0x1, 0x02, "STag not associated with DDP stream"},
		{errTOWrap, 0x1, 0x03, "TO wrap"},
		{errTaggedVersion, 0x1, 0x04, "invalid DDP version"},
		{errInvalidQN, 0x2, 0x01, "invalid QN"},
		{errNoBuffer, 0x2, 0x02, "invalid MSN - no buffer available"},
		{errMSNRange, 0x2, 0x03, "invalid MSN - MSN range is not valid"},
		{errInvalidMO, 0x2, 0x04, "invalid MO"},
		{errMessageTooLong, 0x2, 0x05, "DDP message too long for available buffer"},
		{errUntaggedVersion, 0x2, 0x06, "invalid DDP version"},
	}
	for _, r := range rows {
		assert.Equal(t, r.typ, r.proto.Type)
		assert.Equal(t, r.code, r.proto.Code)
		assert.Equal(t, r.name, iwarpwire.DDPCodeName(r.typ, r.code))
		assert.True(t, iwarpwire.ValidDDPCode(r.typ, r.code))
		assert.Equal(t, iwarpwire.DDPTermCode(r.typ, r.code), r.proto.TermCode())
		assert.Contains(t, r.proto.Error(), r.name)
	}
	assert.Equal(t, iwarp.Term.DDPNoBuffer, errNoBuffer.TermCode(), "RFC 5040 §4.8: Terminate layer 1 is DDP")
}

func TestErrorWrappingIsAs(t *testing.T) {
	cause := errors.New("cause")
	err := fmt.Errorf("outer: %w", &RecvError{Err: iwarpwire.NewDDPError(iwarp.Term.DDPNoBuffer, cause)})
	assert.ErrorIs(t, err, errNoBuffer)
	assert.NotErrorIs(t, err, errMSNRange)
	assert.NotErrorIs(t, err, errInvalidSTag)
	assert.ErrorIs(t, err, cause)
	e, ok := asError(err)
	require.True(t, ok)
	assert.Equal(t, iwarp.DDPTypeUntagged, e.Type)
	assert.Equal(t, iwarp.Term.DDPNoBuffer.Code, e.Code)
	assert.Contains(t, e.Error(), "untagged buffer error (type 0x2, code 0x02)")
	assert.Contains(t, e.Error(), "cause")
	var re *RecvError
	require.ErrorAs(t, err, &re)
	_, ok = asError(errors.New("plain"))
	assert.False(t, ok)
}
