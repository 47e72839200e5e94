package ddp

import (
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
)

// Sender → llptest pipe → Receiver with random message sizes from 0 to
// several MiB, tagged and untagged on several queues, with the MULPDU
// changing between and within messages (RFC 5041 §3 req. 1, §5.2, §5.3,
// §5.4). Every octet is verified at the Data Sink.
func TestEndToEndPipe(t *testing.T) {
	a, b := llptest.NewPair()
	u := newTestULP()
	const regionSize = 8 << 20
	region := make([]byte, regionSize)
	u.register(0x1000, region, 0)
	r := newReceiver(u, 4)

	// Change the MULPDU after every 97th segment, mid-message.
	mulpdus := []int{1448, 9000, 600, 65536, iwarp.SCTPMinMULPDU, 1500}
	var sent atomic.Int64
	a.SetTap(func([]byte) {
		if n := sent.Add(1); n%97 == 0 {
			a.SetMULPDU(mulpdus[int(n/97)%len(mulpdus)])
		}
	})
	b.Start(r)
	sender := NewSender(a)

	rng := rand.New(rand.NewPCG(5, 6))
	type expect struct {
		tagged bool
		qn     uint32
		data   []byte
		to     uint64
	}
	var want []expect
	next := 0 // tagged messages go to disjoint ranges of the region
	sizes := []int{0, 1, 2 << 20, 17, 3<<20 + 11, 0, 1448 - iwarpwire.DDPTaggedHeaderLen, 1448 - iwarpwire.DDPUntaggedHeaderLen, 1449}
	for i := 0; i < 30; i++ {
		sizes = append(sizes, rng.IntN(64<<10))
	}
	for i, size := range sizes {
		data := pattern(size, byte(i))
		if i%2 == 0 {
			next += rng.IntN(1000)
			to := uint64(next)
			next += size
			require.LessOrEqual(t, next, regionSize)
			require.NoError(t, sender.SendTagged(0x40, 0x1000, to, data))
			want = append(want, expect{tagged: true, data: data, to: to})
			continue
		}
		qn := uint32(i % 4)
		buf := make([]byte, size+rng.IntN(100))
		msn, err := r.PostUntagged(qn, buf, uint64(i))
		require.NoError(t, err)
		assert.Equal(t, sender.nextMSN(qn), msn, "both ends count MSNs per QN from 1")
		got, err := sender.SendUntagged([5]byte{0x41, byte(i)}, qn, data)
		require.NoError(t, err)
		assert.Equal(t, msn, got)
		want = append(want, expect{qn: qn, data: data})
	}
	require.NoError(t, a.Close())
	select {
	case <-u.closedCh:
	case <-time.After(30 * time.Second):
		t.Fatal("receiver did not see the close")
	}
	<-b.Done()

	delivered, failed := u.snapshot()
	require.Empty(t, failed)
	require.Len(t, delivered, len(want))
	for i, w := range want {
		m := delivered[i]
		require.Equal(t, w.tagged, m.Tagged, "message %d", i)
		assert.Equal(t, len(w.data), m.Length, "message %d", i)
		if w.tagged {
			assert.Equal(t, w.to, m.FirstTO)
			assert.Equal(t, uint8(0x40), m.Tag.RsvdULP)
			assert.Equal(t, w.data, region[w.to:w.to+uint64(len(w.data))], "message %d", i)
			continue
		}
		assert.Equal(t, w.qn, m.Untag.QN)
		assert.Equal(t, [5]byte{0x41, byte(i)}, m.Untag.RsvdULP)
		assert.Equal(t, uint64(i), m.Cookie)
		assert.Equal(t, w.data, u.payloads[i], "message %d", i)
	}
	u.mu.Lock()
	assert.Equal(t, []error{nil}, u.closed)
	u.mu.Unlock()
	assert.Empty(t, r.drain())
}

// A hostile segment injected into the pipe fails the stream once; the LLP
// stops delivering, sending stays possible, and the close is reported.
func TestEndToEndInjectedError(t *testing.T) {
	a, b := llptest.NewPair()
	u := newTestULP()
	r := newReceiver(u, 4)
	b.Start(r)
	_, err := r.PostUntagged(0, make([]byte, 8), 1)
	require.NoError(t, err)
	sender := NewSender(a)
	_, err = sender.SendUntagged([5]byte{}, 0, []byte("ok"))
	require.NoError(t, err)
	bad := untaggedSeg(true, 0, 7, 0, []byte("bad"))
	require.NoError(t, a.Inject(bad))
	_, err = sender.SendUntagged([5]byte{}, 0, []byte("dropped"))
	require.NoError(t, err)

	// The receiving side can still send (its Terminate).
	require.NoError(t, NewSender(b).SendTagged(0, 1, 0, []byte("term")))
	require.NoError(t, a.Close())
	<-u.closedCh
	<-b.Done()
	require.NoError(t, b.Abort())
	delivered, failed := u.snapshot()
	require.Len(t, delivered, 1)
	require.Len(t, failed, 1)
	assert.ErrorIs(t, failed[0], errMSNRange)
	assert.Equal(t, bad[:iwarpwire.DDPUntaggedHeaderLen], failed[0].Header)
	assert.Equal(t, len(bad), failed[0].SegmentLen)
}
