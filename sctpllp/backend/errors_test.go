package backend_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// The contract's errors are distinct, and ErrAssociationClosed is an
// llp.ErrClosed, so that a ULP above DDP sees one "closed" whatever the
// backend.
func TestContractErrors(t *testing.T) {
	all := []error{backend.ErrStreamRange, backend.ErrStreamInUse, backend.ErrAssociationClosed,
		backend.ErrEmptyMessage, backend.ErrPeerUnresponsive, backend.ErrAdaptationMismatch}
	for i, a := range all {
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
	wrapped := fmt.Errorf("pion: write on stream 3: %w", backend.ErrAssociationClosed)
	assert.ErrorIs(t, wrapped, llp.ErrClosed)
	assert.Equal(t, uint32(16), backend.PPIDSegment, "RFC 5043 §5.2")
	assert.Equal(t, uint32(17), backend.PPIDControl, "RFC 5043 §5.2")
}
