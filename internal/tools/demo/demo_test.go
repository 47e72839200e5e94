package demo

import (
	"bytes"
	"context"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDemo runs the loopback demo over real pion associations: every
// intact stream verifies every operation on both sides, the broken stream
// ends with the Terminate RFC 5041 §7.2 prescribes for an invalid STag, and
// the association shuts down once every stream is closed or erroneous.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	rep, err := Run(context.Background(), Config{Streams: 12, Size: 128 << 10, Break: 4}, &out)
	require.NoError(t, err)
	require.NoError(t, rep.OK(), out.String())
	require.Len(t, rep.Streams, 12)
	for _, s := range rep.Streams {
		if s.Broken {
			require.NotNil(t, s.Terminate)
			assert.True(t, s.Terminate.Remote)
			assert.Equal(t, iwarp.Term.DDPInvalidSTag, s.Terminate.Code)
			assert.True(t, s.Erroneous)
			assert.True(t, s.ServerErroneous)
			continue
		}
		// The script's 13 operations (the Write and its Read back count two)
		// and two syncs: before the second Send with Invalidate, which
		// needs a fresh STag, and at the end.
		assert.Equal(t, 15, s.Ops, "stream %d", s.ID)
		assert.False(t, s.ServerErroneous, "stream %d", s.ID)
		assert.False(t, s.Erroneous, "stream %d", s.ID)
	}
	assert.True(t, rep.AssociationClosed)
	assert.Contains(t, out.String(), "RESULT: PASS")
}

// TestDemoNoBreak runs the demo with every stream intact.
func TestDemoNoBreak(t *testing.T) {
	rep, err := Run(context.Background(), Config{Streams: 3, Size: 1000, NoBreak: true}, nil)
	require.NoError(t, err)
	require.NoError(t, rep.OK())
	for _, s := range rep.Streams {
		assert.False(t, s.Broken)
	}
}

// TestDemoManyStreams opens more streams at once than the default limit
// of Initiates waiting for the passive side's ULP (RFC 5043 §6.4: beyond
// it an Initiate is answered with a Session Terminate): the demo raises
// the limit to its stream count.
// TestDemoBreakBeyondStreams: breaking a stream that is not there is an
// error, not a demo with nothing broken (issue 48).
func TestDemoBreakBeyondStreams(t *testing.T) {
	_, err := Run(context.Background(), Config{Streams: 2, Size: 512, Break: 5}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "below the number of streams")
}

func TestDemoManyStreams(t *testing.T) {
	rep, err := Run(context.Background(), Config{Streams: 600, Size: 512}, nil)
	require.NoError(t, err)
	require.NoError(t, rep.OK())
	require.Len(t, rep.Streams, 600)
}
