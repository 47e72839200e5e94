package rdmap

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// returnsWhile reports whether f returns while hold is held (within d):
// it calls f in a goroutine, waits d, then releases with release and
// waits for f.
func returnsWhile(t *testing.T, d time.Duration, f func() error, release func()) bool {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	var early bool
	select {
	case err := <-done:
		require.NoError(t, err)
		early = true
	case <-time.After(d):
	}
	release()
	if !early {
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("f did not return after the release")
		}
	}
	return early
}

// RFC 5040 §8.1.1 item 6: once Deregister or Invalidate returns, the
// network can no longer modify the region. A tagged segment being placed
// (rxMu held by the receive path) must finish first.
func TestFence_WaitsForTaggedPlacement_RFC5040_8_1_1(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	for _, op := range []struct {
		name  string
		do    func(m *MR) error
		valid bool // afterwards: Reregister makes a new STag valid
	}{
		{"Invalidate", (*MR).Invalidate, false},
		{"Deregister", (*MR).Deregister, false},
		{"Reregister", func(m *MR) error { return m.Reregister(make([]byte, 8), RemoteWrite) }, true},
	} {
		t.Run(op.name, func(t *testing.T) {
			m, err := p.pdB.Register(make([]byte, 64), RemoteWrite, MROption{Endpoint: p.b})
			require.NoError(t, err)
			old := m.STag()
			p.b.rxMu.Lock() // a tagged segment of b is being placed
			early := returnsWhile(t, 50*time.Millisecond, func() error { return op.do(m) }, p.b.rxMu.Unlock)
			assert.False(t, early, "%s returned while a tagged placement was in progress", op.name)
			assert.Equal(t, op.valid, m.isValid())
			if op.valid {
				assert.NotEqual(t, old, m.STag(), "the old STag stays invalid (RFC 5040 §8.1.1 item 4)")
			}
		})
	}
}

// An Atomic Request's target is modified by the responder under the
// device's atomic lock (RFC 7306 §5.3), not on the receive path: the
// fence waits for it too.
func TestFence_WaitsForAtomicInProgress_RFC7306_5_3(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	m, err := p.pdB.Register(make([]byte, 64), RemoteAtomic, MROption{Endpoint: p.b})
	require.NoError(t, err)
	p.dev.atomicMu.Lock() // an atomic is between its validation and its write
	early := returnsWhile(t, 50*time.Millisecond, m.Deregister, p.dev.atomicMu.Unlock)
	assert.False(t, early, "Deregister returned while an atomic was in progress")
}

// Untagged segments go to posted buffers, which no STag names: their
// receive path does not take the fence's lock, so a Send is received and
// completed while a fence would wait.
func TestFence_UntaggedSegmentsDoNotTakeTheFenceLock(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	buf := make([]byte, 16)
	require.NoError(t, p.b.PostRecv(7, buf))
	p.b.rxMu.Lock()
	defer p.b.rxMu.Unlock()
	require.NoError(t, p.a.postSend1(SendWR{ID: 1, Op: WRSend, Local: []byte("untagged")}))
	c := poll(t, p.rcqB)
	require.NoError(t, c.Err)
	assert.Equal(t, uint64(7), c.WRID)
	assert.Equal(t, "untagged", string(buf[:c.Length]))
}
