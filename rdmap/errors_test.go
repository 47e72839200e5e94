package rdmap

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{TermCatastrophicGlobal, "RDMA remote operation error: catastrophic error, global (0/2/0x08)"},
		{TermOperationCannotInvalidate, "RDMA remote operation error: STag cannot be invalidated (0/2/0x09)"},
		{TermOperationUnspecified, "RDMA remote operation error: unspecified error (0/2/0xff)"},
		{TermDDPInvalidSTag, "DDP tagged buffer error: invalid STag (1/1/0x00)"},
		{TermDDPBaseBounds, "DDP tagged buffer error: base or bounds violation (1/1/0x01)"},
		{TermDDPSTagNotAssociated, "DDP tagged buffer error: STag not associated with DDP Stream (1/1/0x02)"},
		{TermDDPTOWrap, "DDP tagged buffer error: TO wrap (1/1/0x03)"},
		{TermDDPTaggedVersion, "DDP tagged buffer error: invalid DDP version (1/1/0x04)"},
		{TermDDPInvalidQN, "DDP untagged buffer error: invalid QN (1/2/0x01)"},
		{TermDDPNoBuffer, "DDP untagged buffer error: invalid MSN - no buffer available (1/2/0x02)"},
		{TermDDPMSNRange, "DDP untagged buffer error: invalid MSN - MSN range is not valid (1/2/0x03)"},
		{TermDDPInvalidMO, "DDP untagged buffer error: invalid MO (1/2/0x04)"},
		{TermDDPMessageTooLong, "DDP untagged buffer error: DDP message too long for available buffer (1/2/0x05)"},
		{TermDDPUntaggedVersion, "DDP untagged buffer error: invalid DDP version (1/2/0x06)"},
		{TermDDPLocalCatastrophic, "DDP local catastrophic (1/0/0x00)"},
		{TermCode{LayerLLP, 0, 6}, "LLP error (2/0/0x06)"},
		{TermCode{LayerRDMA, 1, 0x42}, "RDMA remote protection error: unknown code (0/1/0x42)"},
		{TermCode{9, 9, 9}, "unknown layer (9/9/0x09)"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.c.String())
	}
	assert.True(t, TermTOWrap.IsRemoteProtection())
	assert.False(t, TermUnexpectedOpcode.IsRemoteProtection())
}

func TestTerminateError_Wrapping(t *testing.T) {
	cause := errors.New("cause")
	te := &TerminateError{Code: TermAccessRights, Err: cause}
	err := fmt.Errorf("%w: %w", ErrFlushed, te)
	require.ErrorIs(t, err, ErrFlushed)
	require.ErrorIs(t, err, cause)
	var got *TerminateError
	require.ErrorAs(t, err, &got)
	assert.Equal(t, TermAccessRights, got.Code)
	assert.Contains(t, te.Error(), "terminate sent: RDMA remote protection error: access rights violation")
	assert.Contains(t, (&TerminateError{Code: TermTOWrap, Remote: true}).Error(), "terminate received")
}
