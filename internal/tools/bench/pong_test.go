package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// endpointPair returns two started endpoints joined by an in-memory LLP.
func endpointPair(t *testing.T) (a, b *rdmap.Endpoint) {
	t.Helper()
	dev := new(rdmap.Device)
	pa, pb := llptest.NewPair()
	a, err := dev.AllocPD().NewEndpoint(pa, rdmap.EndpointConfig{})
	require.NoError(t, err)
	b, err = dev.AllocPD().NewEndpoint(pb, rdmap.EndpointConfig{})
	require.NoError(t, err)
	require.NoError(t, a.Start())
	require.NoError(t, b.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() { _ = b.Close(ctx); close(done) }()
		_ = a.Close(ctx)
		<-done
	})
	return a, b
}

// The active side of a bandwidth run sends its Fin and then its Report
// (server.go: a reverse run), so both can be in the passive side's receive
// CQ when its handler polls up to four completions at once. The Fin ends
// the run; the Report after it must still reach the Report's receive.
// Before, the handler dropped it, and the passive client waited for a
// Report that had arrived (3% of bidirectional Write-with-Immediate runs
// over MPA in TLS, whose records bring both in one read).
func TestPassiveHandler_KeepsTheReportAfterTheFin(t *testing.T) {
	for _, test := range []Test{TestWriteImm, TestSend} {
		t.Run(test.String(), func(t *testing.T) {
			a, b := endpointPair(t)
			c := newConn(b)
			c.setup = setupMsg{Test: test, Size: 64, Depth: 4, RxDepth: 4}
			require.True(t, c.setup.credited())
			require.NoError(t, c.prepareData(false))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			require.NoError(t, errOf(a.Do(ctx, rdmap.SendWR{Op: rdmap.WRImmediate, Imm: finBit | 0})))
			report := Report{Ops: 7, Bytes: 448, Elapsed: time.Second}
			require.NoError(t, errOf(a.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: report.appendTo(nil)})))
			require.Eventually(t, func() bool { return received(b) == 2 }, 5*time.Second, time.Millisecond,
				"the Fin and the Report wait in the CQ before the run starts")

			fin, err := c.passive(ctx)
			require.NoError(t, err)
			assert.Equal(t, uint64(0), fin.Ops)

			short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
			defer cancelShort()
			msg, err := c.recvMsg(short)
			require.NoError(t, err, "the Report that came with the Fin")
			got, _, err := parseReport(msg)
			require.NoError(t, err)
			assert.Equal(t, report.Ops, got.Ops)
		})
	}
}
