package rdmap

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHelpersRecycle: a blocking helper's request goes back to the
// endpoint's free list once the helper has its completion, as a posted
// request's does once it is polled, so helpers allocate no request per
// operation (TestRealPathAllocs in package transport counts the
// allocations over a real LLP).
func TestHelpersRecycle(t *testing.T) {
	var tgt *MR
	p := newPair(t, EndpointConfig{}, EndpointConfig{}, func(p *pair) {
		var err error
		tgt, err = p.pdB.Register(make([]byte, 4096), RemoteWrite|RemoteRead)
		require.NoError(t, err)
	})
	free := func(e *Endpoint) (send, recv int) {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.freeSend), len(e.freeRecv)
	}
	require.NoError(t, p.a.write(t.Context(), make([]byte, 64), tgt.STag(), 0))
	s1, _ := free(p.a)
	for range 10 {
		require.NoError(t, p.a.write(t.Context(), make([]byte, 64), tgt.STag(), 0))
		require.NoError(t, p.a.read(t.Context(), nil, 0, 0, tgt.STag(), 0))
	}
	s2, _ := free(p.a)
	assert.Equal(t, s1, s2, "one request serves every helper call")
	assert.Positive(t, s2)

	// Recv on B, Sends from A.
	got := make(chan error, 10)
	go func() {
		for range 10 {
			_, err := p.b.recvWait(t.Context(), make([]byte, 64))
			got <- err
			if err != nil {
				return
			}
		}
	}()
	posted := func() bool {
		p.b.mu.Lock()
		defer p.b.mu.Unlock()
		return p.b.rq.Len() == 1
	}
	for range 10 {
		// RFC 5041 §7.1: a Send finds a posted buffer, or it is an error.
		require.Eventually(t, posted, 5*time.Second, time.Millisecond)
		require.NoError(t, p.a.send(t.Context(), []byte("x")))
		require.NoError(t, <-got)
	}
	_, r := free(p.b)
	assert.Equal(t, 1, r, "Recv's request went back to the free list")
}
