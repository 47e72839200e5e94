package sctp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// TestReassemblerResetStreams_RFC6525_5_2_2: a reset stream expects SSN 0
// again; a stream holding an ordered fragment, or a message waiting for
// an earlier SSN, cannot be reset yet (In progress), and the others of
// the request are left alone then too.
func TestReassemblerResetStreams_RFC6525_5_2_2(t *testing.T) {
	r := newReassembler(reassemblyConfig{Streams: 4, Budget: 1 << 16})
	push := func(d wire.Data) {
		t.Helper()
		_, err := r.Push(&d)
		require.NoError(t, err)
		for _, ok := r.Next(); ok; _, ok = r.Next() {
		}
	}
	push(chunk(1, 1, 0, "BE", "a"))
	push(chunk(2, 1, 1, "BE", "b"))
	assert.True(t, r.ResetStreams([]byte{0, 1}))
	push(chunk(3, 1, 0, "BE", "after the reset"))

	push(chunk(4, 2, 0, "B", "half"))   // a fragment held on stream 2
	push(chunk(6, 3, 1, "BE", "early")) // stream 3 waits for SSN 0
	assert.False(t, r.ResetStreams([]byte{0, 2}), "a fragment is held")
	assert.False(t, r.ResetStreams([]byte{0, 3}), "a message waits")
	assert.False(t, r.ResetStreams(nil), "every stream: some hold messages")
	assert.False(t, r.ResetStreams([]byte{0, 1, 0, 3}))
	assert.True(t, r.ResetStreams([]byte{0, 1, 0, 9}), "stream 9 does not exist: ignored")
	_, err := r.Push(ptr(chunk(7, 1, 0, "BE", "stream 1 again at 0")))
	require.NoError(t, err)
}

func ptr[T any](v T) *T { return &v }
