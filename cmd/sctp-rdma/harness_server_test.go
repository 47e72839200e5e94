package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// serveProcess starts this executable's "serve" on a free port for the
// harness's multistream figures: a bench client runs 8 streams against
// it, and stop ends the process.
func TestServeProcess(t *testing.T) {
	t.Setenv(asCLI, "1")
	for _, llp := range []string{transport.SCTPNative, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			addr, stop, err := serveProcess(llp)
			require.NoError(t, err)
			stopped := false
			defer func() {
				if !stopped {
					stop()
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := bench.Run(ctx, bench.Config{Transport: transport.Options{LLP: llp}, Addr: addr,
				Test: bench.TestWrite, Size: 16 << 10, Streams: 8, Depth: 4, Iters: 32})
			require.NoError(t, err)
			assert.Positive(t, res.Forward.Gbps())
			stop()
			stopped = true
			_, err = bench.Run(ctx, bench.Config{Transport: transport.Options{LLP: llp}, Addr: addr,
				Test: bench.TestWrite, Size: 16 << 10, Streams: 1, Depth: 1, Iters: 1, ConnectTimeout: 2 * time.Second})
			assert.Error(t, err, "the server process is gone")
		})
	}
}
