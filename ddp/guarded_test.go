package ddp

import (
	"errors"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// guardULP is a ULP whose lock guards its Receiver (NewReceiverGuarded). It
// checks, in every callback, whether the lock is held as the contract
// says: Deliver with it, everything else without. TryLock cannot tell
// who holds the lock, but only the test's goroutines use it.
type guardULP struct {
	mu        sync.Mutex
	buf       []byte // the tagged region, STag 1
	violation []string
	delivered []Message // guarded by mu
	payloads  []string
	failed    []*RecvError
	closed    int
	refuse    bool // Deliver returns an error
	// lax: other goroutines hold the lock at times, the checks are off.
	lax bool
}

func (u *guardULP) unheld(where string) {
	if u.lax {
		return
	}
	if u.mu.TryLock() {
		u.mu.Unlock()
		return
	}
	u.violation = append(u.violation, where+" called with the lock held")
}

func (u *guardULP) TaggedTarget(h *iwarpwire.DDPTaggedHeader, length int) ([]byte, error) {
	u.unheld("TaggedTarget")
	if h.STag != 1 || h.TO+uint64(length) > uint64(len(u.buf)) {
		return nil, &iwarpwire.DDPError{Type: iwarp.DDPTypeTagged, Code: iwarp.Term.DDPInvalidSTag.Code}
	}
	return u.buf[h.TO : h.TO+uint64(length)], nil
}

func (u *guardULP) CheckUntagged(*iwarpwire.DDPUntaggedHeader) error {
	u.unheld("CheckUntagged")
	return nil
}

func (u *guardULP) Deliver(m *Message) error {
	if !u.lax && u.mu.TryLock() {
		u.mu.Unlock()
		u.violation = append(u.violation, "Deliver called without the lock")
	}
	u.delivered = append(u.delivered, *m)
	u.payloads = append(u.payloads, string(m.Buffer))
	if u.refuse {
		return errors.New("refused")
	}
	return nil
}

func (u *guardULP) Failed(re *RecvError) {
	u.unheld("Failed")
	u.mu.Lock()
	u.failed = append(u.failed, re)
	u.mu.Unlock()
}

func (u *guardULP) Closed(error) {
	u.unheld("Closed")
	u.mu.Lock()
	u.closed++
	u.mu.Unlock()
}

func (u *guardULP) post(t *testing.T, r *Receiver, qn uint32, buf []byte, cookie uint64) uint32 {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	msn, err := r.PostUntagged(qn, buf, cookie)
	require.NoError(t, err)
	return msn
}

// A guarded Receiver takes the ULP's lock for untagged placement and holds
// it for every delivery (tagged too), and calls nothing else with it:
// the receive path of a message costs one lock (RFC 5041 §5.3, §5.4
// delivery order unchanged).
func TestGuardedReceiver_OneLockPerMessage(t *testing.T) {
	u := &guardULP{buf: make([]byte, 16)}
	r := NewReceiverGuarded(u, 2, &u.mu)
	assert.Equal(t, uint32(1), u.post(t, r, 0, make([]byte, 8), 10))
	assert.Equal(t, uint32(2), u.post(t, r, 0, make([]byte, 8), 11))
	u.mu.Lock()
	require.NoError(t, r.PostCredits(1, 1, 4)) // the ULP holds the lock: no deadlock
	u.mu.Unlock()

	require.NoError(t, r.HandleSegment(untaggedSeg(false, 0, 1, 0, []byte("1234"))))
	require.NoError(t, r.HandleSegment(taggedSeg(true, 0x41, 1, 2, []byte("tag"))))
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, 1, 4, []byte("5678"))))
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 1, 1, 0, []byte("cr"))))
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, 2, 0, nil)))

	u.mu.Lock()
	defer u.mu.Unlock()
	assert.Empty(t, u.violation)
	require.Len(t, u.delivered, 4)
	assert.True(t, u.delivered[0].Tagged)
	assert.Equal(t, "tag", string(u.buf[2:5]))
	assert.Equal(t, []string{"", "12345678", "cr", ""}, u.payloads)
	assert.Equal(t, uint64(10), u.delivered[1].Cookie)
	assert.Equal(t, uint64(11), u.delivered[3].Cookie)
	assert.Equal(t, 0, r.Posted(0))
	assert.Empty(t, r.drain())
}

// A Deliver error fails the stream as in an unguarded Receiver (RFC 5041
// §7.1): Failed comes without the lock, later segments are dropped, and
// posting fails with ErrStopped.
func TestGuardedReceiver_DeliverErrorFailsWithoutTheLock(t *testing.T) {
	u := &guardULP{refuse: true}
	r := NewReceiverGuarded(u, 1, &u.mu)
	u.post(t, r, 0, make([]byte, 8), 1)
	u.post(t, r, 0, make([]byte, 8), 2)
	err := r.HandleSegment(untaggedSeg(true, 0, 1, 0, []byte("x")))
	var re *RecvError
	require.ErrorAs(t, err, &re)
	require.NotNil(t, re.Message)
	require.ErrorIs(t, r.HandleSegment(untaggedSeg(true, 0, 2, 0, []byte("y"))), re)
	r.HandleClosed(nil)

	u.mu.Lock()
	defer u.mu.Unlock()
	assert.Empty(t, u.violation)
	assert.Len(t, u.delivered, 1)
	assert.Len(t, u.failed, 1)
	assert.Equal(t, 1, u.closed)
	_, err = r.PostUntagged(0, make([]byte, 8), 3)
	require.ErrorIs(t, err, errStopped)
	drained := r.drain()
	require.Len(t, drained, 1)
	assert.Equal(t, uint64(2), drained[0].Cookie)
}

// Buffers posted from another goroutine (under the ULP's lock) while
// segments arrive are filled in order; the race detector checks the
// guarding.
func TestGuardedReceiver_ConcurrentPosts(t *testing.T) {
	u := &guardULP{lax: true}
	r := NewReceiverGuarded(u, 1, &u.mu)
	const n = 2000
	posted := make(chan struct{}, n)
	go func() {
		for i := range n {
			u.post(t, r, 0, make([]byte, 4), uint64(i))
			posted <- struct{}{}
		}
	}()
	for i := range n {
		<-posted
		require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, uint32(i+1), 0, []byte{byte(i)})))
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	require.Len(t, u.delivered, n)
	for i, m := range u.delivered {
		require.Equal(t, uint64(i), m.Cookie)
	}
}

func TestNewReceiverGuarded_Panics(t *testing.T) {
	var mu sync.Mutex
	assert.Panics(t, func() { NewReceiverGuarded(nil, 1, &mu) })
	assert.Panics(t, func() { NewReceiverGuarded(&guardULP{}, 1, nil) })
	assert.Panics(t, func() { NewReceiverGuarded(&guardULP{}, 0, &mu) })
}
