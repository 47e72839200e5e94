package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// TestServerTotals_OneSidedTests: the passive side of a Write test counts
// the octets the client's Writes placed, and of a Read test the Read
// Responses it sent (RFC 5040 §5.1, §5.2), per stream while it runs and
// in the totals after.
func TestServerTotals_OneSidedTests(t *testing.T) {
	for _, llp := range []string{transport.SCTPPion, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			addr, srv, stop := startServerStats(t, llp, ServerConfig{})
			defer stop()
			const size, iters = 4096, 100
			for _, test := range []Test{TestWrite, TestRead} {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				res, err := Run(ctx, Config{Transport: transport.Options{LLP: llp}, Addr: addr, Test: test, Size: size, Depth: 4, Iters: iters, Streams: 2})
				cancel()
				require.NoError(t, err)
				require.Equal(t, uint64(2*iters), res.Forward.Ops)
			}
			require.Eventually(t, func() bool { return srv.Totals().Finished == 4 }, 10*time.Second, 10*time.Millisecond)
			tot := srv.Totals()
			assert.Equal(t, uint64(2*iters), tot.Received[iwarp.RDMAPOpWrite], "Writes placed at the server")
			assert.GreaterOrEqual(t, tot.OctetsPlaced, uint64(2*iters*size))
			// Each Write stream also ends with a zero-length Read, its fence.
			assert.Equal(t, uint64(2*iters+2), tot.Sent[iwarp.RDMAPOpReadResponse])
			assert.Equal(t, uint64(2*iters+2), tot.Received[iwarp.RDMAPOpReadRequest])
			assert.GreaterOrEqual(t, tot.OctetsSent, uint64(2*iters*size))
			assert.Empty(t, tot.Terminates, "graceful ends send no Terminate")
			assert.Empty(t, srv.Streams())
		})
	}
}

// TestServerStreams_Live lists a stream while its client runs.
func TestServerStreams_Live(t *testing.T) {
	addr, srv, stop := startServerStats(t, transport.SCTPPion, ServerConfig{})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{Transport: transport.Options{LLP: transport.SCTPPion}, Addr: addr, Test: TestWrite, Size: 1024, Depth: 2, Duration: 1500 * time.Millisecond})
		done <- err
	}()
	var st []StreamStats
	require.Eventually(t, func() bool {
		st = srv.Streams()
		return len(st) == 1 && st[0].Received[iwarp.RDMAPOpWrite] > 10
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, transport.SCTPPion, st[0].LLP)
	assert.Equal(t, uint16(1), st[0].StreamID)
	assert.NotEmpty(t, st[0].Peer)
	assert.Equal(t, TestWrite.String(), st[0].Test)
	require.NoError(t, <-done)
}
