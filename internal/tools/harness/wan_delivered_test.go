package harness

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMeasureDelivered_RFC5040_5_5_WaitsForTheTail: the raw flow is
// measured as bench measures an RDMA Write, whose clock stops at the
// zero-length Read that completes only after every earlier Write was
// placed (RFC 5040 §5.5): the octets written before the halt but still
// queued at that point count, and so does the time they take to arrive.
func TestMeasureDelivered_RFC5040_5_5_WaitsForTheTail(t *testing.T) {
	var got, sent atomic.Int64
	const queued = 1 << 20
	sent.Store(queued) // written, none delivered yet
	halted := make(chan struct{})
	halt := func() { close(halted) }
	const tail = 300 * time.Millisecond
	go func() {
		<-halted
		// The queue drains in steps after the halt.
		for i := 0; i < 4; i++ {
			time.Sleep(tail / 4)
			got.Add(queued / 4)
		}
	}()
	const d = 100 * time.Millisecond
	start := time.Now()
	bps, err := measureDelivered(d, &got, &sent, halt, time.Minute)
	el := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, int64(queued), got.Load(), "returned before every written octet arrived")
	require.GreaterOrEqual(t, el, d+tail)
	// The rate is the octets over the whole time, tail included: at
	// most what they would give over d+tail.
	require.LessOrEqual(t, bps, float64(queued)*8/(d+tail).Seconds())
	require.Greater(t, bps, 0.0)
}

// TestMeasureDelivered_StuckTailIsAnError: octets that never arrive end
// the measurement with an error after the timeout, not a figure.
func TestMeasureDelivered_StuckTailIsAnError(t *testing.T) {
	var got, sent atomic.Int64
	sent.Store(10)
	_, err := measureDelivered(10*time.Millisecond, &got, &sent, func() {}, 50*time.Millisecond)
	require.ErrorContains(t, err, "0 of 10 octets arrived")
}
