package rdmap

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTerminateError_Wrapping(t *testing.T) {
	cause := errors.New("cause")
	te := &TerminateError{Code: iwarp.Term.AccessRights, Err: cause}
	err := fmt.Errorf("%w: %w", ErrFlushed, te)
	require.ErrorIs(t, err, ErrFlushed)
	require.ErrorIs(t, err, cause)
	var got *TerminateError
	require.ErrorAs(t, err, &got)
	assert.Equal(t, iwarp.Term.AccessRights, got.Code)
	assert.Contains(t, te.Error(), "terminate sent: RDMA remote protection error: access rights violation")
	assert.Contains(t, (&TerminateError{Code: iwarp.Term.TOWrap, Remote: true}).Error(), "terminate received")
}
