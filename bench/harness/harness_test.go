package harness

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRunSmall runs the whole harness with tiny volumes: every row gets a
// figure and the Markdown page carries the machine description.
func TestRunSmall(t *testing.T) {
	res := Run(Config{Size: 16 << 10, Bytes: 1 << 20, PingIters: 50, ManyStreams: 32, Runs: 1})
	require.Len(t, res.Rows, 12)
	for _, r := range res.Rows {
		require.NoError(t, r.Err, "%s %s", r.LLP, r.Metric)
		assert.Positive(t, r.Value, "%s %s", r.LLP, r.Metric)
	}
	assert.Equal(t, transport.SCTPPion, res.Rows[0].LLP)
	assert.Equal(t, transport.MPA, res.Rows[6].LLP)
	var b bytes.Buffer
	res.Markdown(&b)
	for _, s := range []string{"nproc", "GOGC", "Go", "RDMA Write 16K throughput vs raw LLP", "| sctp-pion |", "| mpa |"} {
		assert.Contains(t, b.String(), s)
	}
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 0.0, median(nil))
}
