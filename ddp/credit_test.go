package ddp

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A credit queue (Receiver.PostCredits) receives messages like a queue of
// Posted buffers (RFC 5041 §5.1.2: placement at MO, delivery on L, MSN in
// order) but into one buffer of the Receiver's, allocated when the first
// segment arrives: an idle queue holds no memory.
func TestReceiverCreditQueue_RFC5041_5_1_2(t *testing.T) {
	r, u := newRx(t, 4)
	require.NoError(t, r.PostCredits(1, 2, 16))
	assert.Equal(t, 2, r.Posted(1))
	assert.Nil(t, r.queues[1].x, "no memory before a segment arrives")

	require.NoError(t, r.HandleSegment(untaggedSeg(false, 1, 1, 4, []byte("efgh"))))
	require.NoError(t, r.HandleSegment(untaggedSeg(false, 1, 1, 0, []byte("abcd"))))
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 1, 1, 8, []byte("ij"))))
	assert.Equal(t, 1, r.Posted(1))
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 1, 2, 0, []byte("xyz"))))
	assert.Equal(t, 0, r.Posted(1))

	delivered, failed := u.snapshot()
	assert.Empty(t, failed)
	require.Len(t, delivered, 2)
	assert.Equal(t, []byte("abcdefghij"), u.payloads[0])
	assert.Equal(t, []byte("xyz"), u.payloads[1])
	assert.Equal(t, 10, delivered[0].Length)
	assert.Equal(t, uint64(0), delivered[0].Cookie)
	assert.Equal(t, uint32(2), delivered[1].Untag.MSN)
	assert.Same(t, &delivered[0].Buffer[0], &delivered[1].Buffer[0], "one buffer reused for every message")

	// Reposting one credit (the ULP consumed the message) takes the next MSN.
	require.NoError(t, r.PostCredits(1, 1, 16))
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 1, 3, 0, nil)))
	delivered, _ = u.snapshot()
	require.Len(t, delivered, 3)
	assert.Equal(t, 0, delivered[2].Length)
}

// The RFC 5041 §7.1 untagged checks apply to credits as to posted buffers.
func TestReceiverCreditQueueErrors_RFC5041_7_1(t *testing.T) {
	cases := []struct {
		name string
		ok   [][]byte
		bad  []byte
		want error
	}{
		{name: "T2 C2 no credit left", ok: [][]byte{untaggedSeg(true, 2, 1, 0, []byte{1})},
			bad: untaggedSeg(true, 2, 2, 0, []byte{1}), want: errNoBuffer},
		{name: "T2 C3 MSN ahead", bad: untaggedSeg(true, 2, 2, 0, []byte{1}), want: errMSNRange},
		{name: "T2 C4 MO at the credit size", bad: untaggedSeg(true, 2, 1, 8, []byte{1}), want: errInvalidMO},
		{name: "T2 C5 longer than the credit size", bad: untaggedSeg(true, 2, 1, 0, make([]byte, 9)), want: errMessageTooLong},
		{name: "T2 C5 last octets beyond the size", ok: [][]byte{untaggedSeg(false, 2, 1, 0, []byte{1, 2, 3, 4})},
			bad: untaggedSeg(true, 2, 1, 4, make([]byte, 5)), want: errMessageTooLong},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, u := newRx(t, 4)
			require.NoError(t, r.PostCredits(2, 1, 8))
			for _, s := range tc.ok {
				require.NoError(t, r.HandleSegment(s))
			}
			err := r.HandleSegment(tc.bad)
			var re *RecvError
			require.ErrorAs(t, err, &re)
			assert.ErrorIs(t, err, tc.want)
			_, failed := u.snapshot()
			require.Len(t, failed, 1)
			assert.ErrorIs(t, r.PostCredits(2, 1, 8), errStopped, "no credit after the failure")
			assert.Empty(t, r.drain(), "credits are the Receiver's: nothing for the ULP to flush")
		})
	}
}

// A queue is either the ULP's buffers or the Receiver's credits, of one size.
func TestReceiverCreditQueueMisuse(t *testing.T) {
	r, _ := newRx(t, 4)
	_, err := r.PostUntagged(0, make([]byte, 4), 1)
	require.NoError(t, err)
	assert.ErrorIs(t, r.PostCredits(0, 1, 4), errCreditQueue, "QN 0 holds posted buffers")
	require.NoError(t, r.PostCredits(1, 1, 4))
	_, err = r.PostUntagged(1, make([]byte, 4), 1)
	assert.ErrorIs(t, err, errCreditQueue)
	assert.ErrorIs(t, r.PostCredits(1, 1, 8), errCreditQueue, "another size")
	assert.ErrorIs(t, r.PostCredits(1, -1, 4), errCreditQueue)
	assert.ErrorIs(t, r.PostCredits(2, 1, 0), errCreditQueue)
	assert.ErrorIs(t, r.PostCredits(4, 1, 4), errBadQueue)
	assert.ErrorIs(t, r.PostCredits(3, 1<<31+1, 4), errQueueFull)
	assert.Equal(t, 1, r.Posted(1))
	ps := r.drain()
	require.Len(t, ps, 1, "only QN 0's buffer")
	assert.Equal(t, uint32(0), ps[0].QN)
}

// Steady-state delivery on a credit queue allocates nothing once its
// buffer exists.
func TestReceiverCreditQueueZeroAllocs(t *testing.T) {
	r := newReceiver(&repostCreditULP{}, 2)
	r.ulp.(*repostCreditULP).r = r
	require.NoError(t, r.PostCredits(1, 1, 32))
	seg := untaggedSeg(true, 1, 1, 0, make([]byte, 28))
	msn := uint32(1)
	require.NoError(t, r.HandleSegment(seg))
	allocs := testing.AllocsPerRun(100, func() {
		msn++
		setMSN(seg, msn)
		if err := r.HandleSegment(seg); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// repostCreditULP gives the credit back on every delivery, like RDMAP.
type repostCreditULP struct {
	benchULP
	r *Receiver
}

func (p *repostCreditULP) Deliver(m *Message) error {
	return p.r.PostCredits(m.Untag.QN, 1, 32)
}

// An idle stream holds a Receiver with four queues: what a queue needs only
// once a buffer is posted or a segment arrives is made then, so the Receiver
// stays within Go's 256-octet size class (352 with the posted-buffer rings
// and 448 with the placement records inline).
func TestReceiverIdleSize(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(rxQueue{}), uintptr(32))
	assert.LessOrEqual(t, unsafe.Sizeof(Receiver{}), uintptr(256))
}
