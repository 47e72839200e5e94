package pion

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// TestPion_StreamIDFlood_RFC5043_8: pion advertises 65535 streams whatever
// the local limit, and started a reader goroutine for every stream id a
// peer wrote on (65,533 ids: +293 MB, 65.5k goroutines). A stream beyond
// Config.Streams is now reset without a reader; the ids below the
// limit keep working; after maxRefusedStreams such ids the association is
// aborted with ErrStreamRange (RFC 9260 §6.5, RFC 5043 §8).
func TestPion_StreamIDFlood_RFC5043_8(t *testing.T) {
	const limit = 8
	ct, st, cerr, serr, _, _ := pionPipePair(t, Config{}, Config{Streams: limit})
	require.NoError(t, cerr)
	require.NoError(t, serr)
	var mu sync.Mutex
	got := map[uint16]int{}
	sdone := make(chan error, 1)
	st.Start(func(sid uint16, ppid uint32, b []byte) {
		mu.Lock()
		got[sid]++
		mu.Unlock()
	}, func(err error) { sdone <- err })
	cdone := make(chan error, 1)
	ct.Start(func(uint16, uint32, []byte) {}, func(err error) { cdone <- err })

	count := func(sid uint16) int {
		mu.Lock()
		defer mu.Unlock()
		return got[sid]
	}
	require.NoError(t, ct.WriteMsg(1, backend.PPIDSegment, []byte("legit")))
	require.Eventually(t, func() bool { return count(1) == 1 }, 5*time.Second, time.Millisecond)

	for sid := uint16(limit); sid < limit+maxRefusedStreams; sid++ {
		require.NoError(t, ct.WriteMsg(sid, backend.PPIDSegment, []byte("flood")))
	}
	require.Eventually(t, func() bool { return st.refusedCount() == maxRefusedStreams }, 10*time.Second, time.Millisecond)
	st.mu.Lock()
	for sid := range st.streams { // a stream here has its reader (readLoop)
		assert.Less(t, sid, uint16(limit), "no state and no reader for refused stream %d", sid)
	}
	st.mu.Unlock()
	for sid := uint16(limit); sid < limit+maxRefusedStreams; sid++ {
		assert.Zero(t, count(sid), "nothing delivered on stream %d", sid)
	}
	require.NoError(t, ct.WriteMsg(2, backend.PPIDSegment, []byte("still served")))
	require.Eventually(t, func() bool { return count(2) == 1 }, 5*time.Second, time.Millisecond)

	// One more: the peer is hostile, the association ends.
	require.NoError(t, ct.WriteMsg(limit+maxRefusedStreams, backend.PPIDSegment, []byte("one too many")))
	select {
	case err := <-sdone:
		require.ErrorIs(t, err, backend.ErrStreamRange)
		require.ErrorIs(t, err, llp.ErrAborted)
	case <-time.After(10 * time.Second):
		t.Fatal("the association survived the flood")
	}
}
