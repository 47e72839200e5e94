package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/bench"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCollectorLint: every metric follows the Prometheus naming and help
// conventions (promlint), for an idle server over each LLP.
func TestCollectorLint(t *testing.T) {
	for _, llp := range []string{transport.SCTPPion, transport.MPA} {
		ln, err := transport.Listen(transport.Options{LLP: llp}, "127.0.0.1:0")
		require.NoError(t, err)
		c := NewCollector(Source{Server: bench.NewServer(bench.ServerConfig{}), Listener: ln})
		problems, err := testutil.CollectAndLint(c)
		require.NoError(t, err)
		assert.Empty(t, problems, llp)
		n, err := testutil.GatherAndCount(newRegistry(c))
		require.NoError(t, err)
		assert.Greater(t, n, 40, "every server-wide series is present when idle")
		require.NoError(t, ln.Close())
	}
}

// TestSnapshotIdle: an idle server's snapshot lists every opcode and
// function with 0, and empty (not null) lists.
func TestSnapshotIdle(t *testing.T) {
	ln, err := transport.Listen(transport.Options{LLP: transport.SCTPPion}, "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	s := Take(Source{Server: bench.NewServer(bench.ServerConfig{}), Listener: ln})
	assert.Equal(t, transport.SCTPPion, s.LLP)
	assert.Len(t, s.RDMAP.Sent, 12)
	assert.Len(t, s.SessionControl.Received, 7)
	assert.NotNil(t, s.PerStream)
	assert.NotNil(t, s.PerAssociation)
	assert.NotNil(t, s.Terminates)
}
