package ddp

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

func newRx(t *testing.T, numQueues int) (*Receiver, *testULP) {
	t.Helper()
	u := newTestULP()
	return newReceiver(u, numQueues), u
}

func post(t *testing.T, r *Receiver, qn uint32, buf []byte, cookie uint64) uint32 {
	t.Helper()
	msn, err := r.PostUntagged(qn, buf, cookie)
	require.NoError(t, err)
	return msn
}

// RFC 5041 §5.1.1, §5.4: tagged payload is placed at STag/TO, the message is
// delivered on L with the sum of payload lengths and the first TO.
func TestReceiverTaggedPlacement_RFC5041_5_1_1(t *testing.T) {
	r, u := newRx(t, 4)
	mem := make([]byte, 100)
	u.register(7, mem, 0)
	require.NoError(t, r.HandleSegment(taggedSeg(false, 0x40, 7, 10, []byte("hello "))))
	require.NoError(t, r.HandleSegment(taggedSeg(false, 0x40, 7, 16, []byte("tagged "))))
	delivered, _ := u.snapshot()
	assert.Empty(t, delivered, "no delivery before L")
	require.NoError(t, r.HandleSegment(taggedSeg(true, 0x40, 7, 23, []byte("world"))))
	assert.Equal(t, []byte("hello tagged world"), mem[10:28])
	assert.Zero(t, mem[9])
	assert.Zero(t, mem[28])
	delivered, failed := u.snapshot()
	assert.Empty(t, failed)
	require.Len(t, delivered, 1)
	m := delivered[0]
	assert.True(t, m.Tagged)
	assert.Equal(t, iwarpwire.DDPTaggedHeader{Last: true, RsvdULP: 0x40, STag: 7, TO: 23}, m.Tag)
	assert.Equal(t, 18, m.Length)
	assert.Equal(t, uint64(10), m.FirstTO)
	assert.Nil(t, m.Buffer)
}

// RFC 5041 §5.2: STag and TO are not checked for a zero-length tagged
// message; it is still delivered.
func TestReceiverTaggedZeroLength_RFC5041_5_2(t *testing.T) {
	r, u := newRx(t, 4)
	require.NoError(t, r.HandleSegment(taggedSeg(true, 0x41, 0xdead, math.MaxUint64, nil)))
	delivered, failed := u.snapshot()
	assert.Empty(t, failed)
	require.Len(t, delivered, 1)
	assert.Equal(t, 0, delivered[0].Length)
	assert.Equal(t, uint64(math.MaxUint64), delivered[0].FirstTO)
	assert.Equal(t, uint32(0xdead), delivered[0].Tag.STag)
}

// RFC 5041 §5.1.2, §5.4: untagged payload placed at MO of the buffer of
// (QN, MSN); Length = MO + payload of the last segment.
func TestReceiverUntaggedPlacement_RFC5041_5_1_2(t *testing.T) {
	r, u := newRx(t, 4)
	buf := make([]byte, 32)
	assert.Equal(t, uint32(1), post(t, r, 0, buf, 111))
	assert.Equal(t, uint32(2), post(t, r, 0, make([]byte, 8), 222))
	assert.Equal(t, 2, r.Posted(0))
	require.NoError(t, r.HandleSegment(untaggedSeg(false, 0, 1, 0, []byte("abcde"))))
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, 1, 5, []byte("fgh"))))
	assert.Equal(t, 1, r.Posted(0))
	delivered, failed := u.snapshot()
	assert.Empty(t, failed)
	require.Len(t, delivered, 1)
	m := delivered[0]
	assert.False(t, m.Tagged)
	assert.Equal(t, 8, m.Length)
	assert.Equal(t, []byte("abcdefgh"), m.Buffer)
	assert.Equal(t, &buf[0], &m.Buffer[0], "the posted buffer itself")
	assert.Equal(t, uint64(111), m.Cookie)
	assert.Equal(t, iwarpwire.DDPUntaggedHeader{Last: true, QN: 0, MSN: 1, MO: 5}, m.Untag)
}

// Zero-length untagged messages still consume a posted buffer.
func TestReceiverZeroLengthUntaggedConsumesBuffer(t *testing.T) {
	r, u := newRx(t, 4)
	post(t, r, 2, nil, 1)
	post(t, r, 2, make([]byte, 4), 2)
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 2, 1, 0, nil)))
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 2, 2, 0, nil)))
	assert.Equal(t, 0, r.Posted(2))
	delivered, _ := u.snapshot()
	require.Len(t, delivered, 2)
	assert.Equal(t, uint64(1), delivered[0].Cookie)
	assert.Equal(t, uint64(2), delivered[1].Cookie)
	assert.Equal(t, 0, delivered[1].Length)
	assert.Empty(t, delivered[1].Buffer)
}

// RFC 5041 §4.3: the MSN assigned to posted buffers starts at 1 and wraps to
// 0 after 0xFFFFFFFF.
func TestReceiverMSNWrap_RFC5041_4_3(t *testing.T) {
	r, u := newRx(t, 1)
	r.queues[0].headMSN = 0xffffffff
	assert.Equal(t, uint32(0xffffffff), post(t, r, 0, make([]byte, 1), 1))
	assert.Equal(t, uint32(0), post(t, r, 0, make([]byte, 1), 2))
	assert.Equal(t, uint32(1), post(t, r, 0, make([]byte, 1), 3))
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, 0xffffffff, 0, []byte{1})))
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, 0, 0, []byte{2})))
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, 1, 0, []byte{3})))
	delivered, failed := u.snapshot()
	assert.Empty(t, failed)
	require.Len(t, delivered, 3)
}

// RFC 5041 §5.3: placement may be out of order; delivery waits for L and
// every octet (§5.4).
func TestReceiverOutOfOrderMO_RFC5041_5_3(t *testing.T) {
	r, u := newRx(t, 1)
	post(t, r, 0, make([]byte, 64), 9)
	msg := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	for _, s := range []struct{ lo, hi int }{{10, 20}, {0, 4}, {25, 30}, {4, 10}, {20, 25}} {
		require.NoError(t, r.HandleSegment(untaggedSeg(false, 0, 1, uint32(s.lo), msg[s.lo:s.hi])))
	}
	delivered, _ := u.snapshot()
	assert.Empty(t, delivered)
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, 1, 30, msg[30:])))
	delivered, failed := u.snapshot()
	assert.Empty(t, failed)
	require.Len(t, delivered, 1)
	assert.Equal(t, msg, delivered[0].Buffer)
}

// Property: any permutation of a message's non-last segments is placed and
// delivered intact.
func TestReceiverRandomMOPermutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 300; iter++ {
		r, u := newRx(t, 1)
		size := 1 + rng.IntN(500)
		msg := pattern(size, byte(iter))
		post(t, r, 0, make([]byte, size+rng.IntN(10)), 1)
		var cuts []int
		for off := 0; off < size; {
			n := 1 + rng.IntN(60)
			cuts = append(cuts, off)
			off += n
		}
		cuts = append(cuts, size)
		type piece struct{ lo, hi int }
		var pieces []piece
		for i := 0; i+1 < len(cuts); i++ {
			pieces = append(pieces, piece{cuts[i], min(cuts[i+1], size)})
		}
		last := pieces[len(pieces)-1]
		rest := pieces[:len(pieces)-1]
		rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		for _, p := range rest {
			require.NoError(t, r.HandleSegment(untaggedSeg(false, 0, 1, uint32(p.lo), msg[p.lo:p.hi])))
		}
		require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, 1, uint32(last.lo), msg[last.lo:last.hi])))
		delivered, failed := u.snapshot()
		require.Empty(t, failed)
		require.Len(t, delivered, 1)
		require.Equal(t, msg, delivered[0].Buffer)
	}
}

// Messages of different queues (and tagged messages) may interleave;
// delivery follows the order in which their last segments arrive.
func TestReceiverInterleavedQueues(t *testing.T) {
	r, u := newRx(t, 4)
	mem := make([]byte, 16)
	u.register(5, mem, 0)
	post(t, r, 0, make([]byte, 16), 100)
	post(t, r, 1, make([]byte, 16), 200)
	post(t, r, 3, make([]byte, 16), 300)
	segs := [][]byte{
		untaggedSeg(false, 0, 1, 0, []byte("A1")),
		untaggedSeg(false, 1, 1, 0, []byte("B1")),
		taggedSeg(false, 0, 5, 0, []byte("T1")),
		untaggedSeg(false, 3, 1, 0, []byte("C1")),
		untaggedSeg(true, 1, 1, 2, []byte("B2")),
		taggedSeg(true, 0, 5, 2, []byte("T2")),
		untaggedSeg(true, 0, 1, 2, []byte("A2")),
		untaggedSeg(true, 3, 1, 2, []byte("C2")),
	}
	for _, s := range segs {
		require.NoError(t, r.HandleSegment(s))
	}
	delivered, failed := u.snapshot()
	assert.Empty(t, failed)
	require.Len(t, delivered, 4)
	assert.Equal(t, []byte("B1B2"), delivered[0].Buffer)
	assert.True(t, delivered[1].Tagged)
	assert.Equal(t, []byte("T1T2"), mem[:4])
	assert.Equal(t, []byte("A1A2"), delivered[2].Buffer)
	assert.Equal(t, []byte("C1C2"), delivered[3].Buffer)
	assert.Equal(t, uint64(300), delivered[3].Cookie)
}

// rxErrCase crafts segments of which the last fails with want.
type rxErrCase struct {
	name   string
	setup  func(r *Receiver, u *testULP)
	ok     [][]byte // segments that succeed first
	bad    []byte
	want   error // prototype *iwarpwire.DDPError or ULP error
	cause  error // additional errors.Is target, optional
	noHdr  bool  // RecvError.Header must be empty
	placed func(t *testing.T, u *testULP, r *Receiver)
}

// Every RFC 5041 §7.2 error code from a crafted segment, with the exact
// type and code, the header copy and segment length of RFC 5040 §4.8.
func TestReceiverErrors_RFC5041_7_1_7_2(t *testing.T) {
	reg := func(r *Receiver, u *testULP) {
		u.register(1, make([]byte, 64), 0)
		u.register(2, make([]byte, 64), 1) // bound to another stream
		for qn := uint32(0); qn < 3; qn++ {
			_, _ = r.PostUntagged(qn, make([]byte, 32), uint64(qn))
		}
	}
	cases := []rxErrCase{
		{name: "T0 empty segment", bad: []byte{}, want: errLocalCatastrophic, cause: iwarpwire.ErrDDPTruncated, noHdr: true},
		{name: "T0 truncated tagged header", bad: []byte{0xc1, 0, 0, 0, 1}, want: errLocalCatastrophic, cause: iwarpwire.ErrDDPTruncated, noHdr: true},
		{name: "T0 truncated untagged header", bad: untaggedSeg(true, 0, 1, 0, nil)[:17], want: errLocalCatastrophic, cause: iwarpwire.ErrDDPTruncated, noHdr: true},
		{name: "T1 C0 invalid STag (check 1)", bad: taggedSeg(true, 0, 99, 0, []byte{1}), want: errInvalidSTag},
		{name: "T1 C0 STag changed within message (§4.2)", ok: [][]byte{taggedSeg(false, 0, 1, 0, []byte{1})},
			bad: taggedSeg(true, 0, 3, 1, []byte{1}), want: errInvalidSTag, cause: errSTagChanged},
		{name: "T1 C1 TO beyond bounds (check 3)", bad: taggedSeg(true, 0, 1, 64, []byte{1}), want: errBaseBounds},
		{name: "T1 C1 TO+len beyond bounds (check 4)", bad: taggedSeg(true, 0, 1, 60, []byte{1, 2, 3, 4, 5}), want: errBaseBounds},
		{name: "T1 C2 STag of another stream (§8.2)", bad: taggedSeg(true, 0, 2, 0, []byte{1}), want: errSTagNotAssociated},
		{name: "T1 C3 TO wrap (check 5)", bad: taggedSeg(true, 0, 1, math.MaxUint64-2, []byte{1, 2, 3, 4}), want: errTOWrap},
		{name: "T1 C4 tagged DV 2", bad: func() []byte { b := taggedSeg(true, 0, 1, 0, []byte{1}); b[0] = 0xc2; return b }(), want: errTaggedVersion, cause: iwarpwire.ErrDDPVersion},
		{name: "T2 C1 invalid QN (check 1)", bad: untaggedSeg(true, 4, 1, 0, []byte{1}), want: errInvalidQN},
		{name: "T2 C1 huge QN", bad: untaggedSeg(true, 0xffffffff, 1, 0, nil), want: errInvalidQN},
		{name: "T2 C2 no buffer posted (check 2)", setup: func(r *Receiver, u *testULP) {},
			bad: untaggedSeg(true, 3, 1, 0, []byte{1}), want: errNoBuffer},
		{name: "T2 C2 zero-length message needs a buffer too", setup: func(r *Receiver, u *testULP) {},
			bad: untaggedSeg(true, 0, 1, 0, nil), want: errNoBuffer},
		{name: "T2 C2 next MSN after buffers used up", ok: [][]byte{untaggedSeg(true, 0, 1, 0, []byte{1})},
			bad: untaggedSeg(true, 0, 2, 0, []byte{1}), want: errNoBuffer},
		{name: "T2 C3 MSN skips ahead (check 5)", setup: func(r *Receiver, u *testULP) {
			_, _ = r.PostUntagged(0, make([]byte, 8), 1)
			_, _ = r.PostUntagged(0, make([]byte, 8), 2)
		}, bad: untaggedSeg(true, 0, 2, 0, []byte{1}), want: errMSNRange},
		{name: "T2 C3 MSN 0 first", bad: untaggedSeg(true, 0, 0, 0, []byte{1}), want: errMSNRange},
		{name: "T2 C3 MSN already delivered", ok: [][]byte{untaggedSeg(true, 1, 1, 0, []byte{1})},
			bad: untaggedSeg(true, 1, 1, 1, []byte{1}), want: errMSNRange},
		{name: "T2 C3 next message before last segment", ok: [][]byte{untaggedSeg(false, 0, 1, 0, []byte{1})},
			bad: untaggedSeg(true, 0, 2, 0, []byte{1}), want: errMSNRange, cause: errIncomplete},
		{name: "T2 C4 MO at buffer end (check 3)", bad: untaggedSeg(true, 0, 1, 32, []byte{1}), want: errInvalidMO},
		{name: "T2 C4 MO huge", bad: untaggedSeg(false, 0, 1, 0xffffffff, []byte{1, 2}), want: errInvalidMO},
		{name: "T2 C4 zero-length MO beyond buffer", bad: untaggedSeg(true, 0, 1, 33, nil), want: errInvalidMO},
		{name: "T2 C4 overlap", ok: [][]byte{untaggedSeg(false, 0, 1, 4, []byte{1, 2, 3, 4})},
			bad: untaggedSeg(false, 0, 1, 7, []byte{1, 2}), want: errInvalidMO, cause: errOverlap},
		{name: "T2 C4 overlap of prefix", ok: [][]byte{untaggedSeg(false, 0, 1, 0, []byte{1, 2, 3, 4})},
			bad: untaggedSeg(false, 0, 1, 0, []byte{1}), want: errInvalidMO, cause: errOverlap},
		{name: "T2 C4 hole at L", ok: [][]byte{untaggedSeg(false, 0, 1, 0, []byte{1, 2})},
			bad: untaggedSeg(true, 0, 1, 4, []byte{1, 2}), want: errInvalidMO, cause: errHole},
		{name: "T2 C4 L alone at MO>0", bad: untaggedSeg(true, 0, 1, 4, []byte{1}), want: errInvalidMO, cause: errHole},
		{name: "T2 C4 L below placed octets", ok: [][]byte{untaggedSeg(false, 0, 1, 10, []byte{1, 2})},
			bad: untaggedSeg(true, 0, 1, 0, []byte{1, 2}), want: errInvalidMO, cause: errBeyondLast},
		{name: "T2 C5 MO+len beyond buffer (check 4)", bad: untaggedSeg(true, 0, 1, 30, []byte{1, 2, 3}), want: errMessageTooLong},
		{name: "T2 C5 message longer than buffer", bad: untaggedSeg(true, 0, 1, 0, make([]byte, 33)), want: errMessageTooLong},
		{name: "T2 C6 untagged DV 0", bad: func() []byte { b := untaggedSeg(true, 0, 1, 0, []byte{1}); b[0] = 0x40; return b }(), want: errUntaggedVersion, cause: iwarpwire.ErrDDPVersion},
		{name: "ULP CheckUntagged error", setup: func(r *Receiver, u *testULP) {
			reg(r, u)
			u.checkErr = func(h *iwarpwire.DDPUntaggedHeader) error {
				if h.RsvdULP[0] == 0xee {
					return errTestULP
				}
				return nil
			}
		}, bad: func() []byte {
			h := iwarpwire.DDPUntaggedHeader{Last: true, RsvdULP: [5]byte{0xee}, QN: 0, MSN: 1}
			return append(h.Append(nil), 1)
		}(), want: errTestULP},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, u := newRx(t, 4)
			if tc.setup != nil {
				tc.setup(r, u)
			} else {
				reg(r, u)
			}
			for _, s := range tc.ok {
				require.NoError(t, r.HandleSegment(s))
			}
			okDelivered, _ := u.snapshot()
			postedBefore := r.Posted(0) + r.Posted(1) + r.Posted(2) + r.Posted(3)

			err := r.HandleSegment(tc.bad)
			require.Error(t, err)
			var re *RecvError
			require.ErrorAs(t, err, &re)
			assert.ErrorIs(t, err, tc.want)
			if tc.cause != nil {
				assert.ErrorIs(t, err, tc.cause)
			}
			if e, ok := asError(err); ok {
				assert.True(t, iwarpwire.ValidDDPCode(e.Type, e.Code), "%v", e)
				want := tc.want.(*iwarpwire.DDPError)
				assert.Equal(t, want.Type, e.Type)
				assert.Equal(t, want.Code, e.Code)
			}
			assert.Equal(t, len(tc.bad), re.SegmentLen)
			if tc.noHdr {
				assert.Empty(t, re.Header)
			} else {
				hl := iwarpwire.DDPControl(tc.bad[0]).HeaderLen()
				assert.Equal(t, tc.bad[:hl], re.Header, "RFC 5040 §4.8: copy of the DDP header")
			}
			assert.Nil(t, re.Message)

			_, failed := u.snapshot()
			require.Len(t, failed, 1)
			assert.Same(t, re, failed[0])

			// RFC 5041 §7.1: every later segment is dropped silently.
			later := untaggedSeg(true, 0, 1, 0, []byte{1})
			assert.Same(t, re, r.HandleSegment(later))
			delivered, failed := u.snapshot()
			assert.Len(t, failed, 1, "Failed called once")
			assert.Len(t, delivered, len(okDelivered), "nothing delivered after the error")

			_, perr := r.PostUntagged(0, make([]byte, 4), 0)
			assert.ErrorIs(t, perr, errStopped)
			assert.ErrorIs(t, perr, tc.want)

			// Nothing posted is lost: Drain returns every undelivered buffer.
			assert.Len(t, r.drain(), postedBefore)
		})
	}
}

// The failing segment's payload is not placed (RFC 5041 §7.1: cease
// placement), untagged and tagged.
func TestReceiverNoPlacementOnError(t *testing.T) {
	r, _ := newRx(t, 1)
	buf := make([]byte, 8)
	post(t, r, 0, buf, 0)
	require.NoError(t, r.HandleSegment(untaggedSeg(false, 0, 1, 0, []byte{1, 2})))
	require.Error(t, r.HandleSegment(untaggedSeg(true, 0, 1, 4, []byte{5, 6})))
	assert.Equal(t, []byte{1, 2, 0, 0, 0, 0, 0, 0}, buf, "hole at L detected before placement")

	r, _ = newRx(t, 1)
	buf = make([]byte, 8)
	post(t, r, 0, buf, 0)
	require.Error(t, r.HandleSegment(untaggedSeg(true, 0, 1, 6, []byte{1, 2, 3})))
	assert.Equal(t, make([]byte, 8), buf)
}

// wrongLenULP returns a placement slice of the wrong length.
type wrongLenULP struct{ *testULP }

func (w wrongLenULP) TaggedTarget(h *iwarpwire.DDPTaggedHeader, length int) ([]byte, error) {
	return make([]byte, length+1), nil
}

func TestReceiverTaggedTargetWrongLength(t *testing.T) {
	u := newTestULP()
	r := newReceiver(wrongLenULP{u}, 1)
	err := r.HandleSegment(taggedSeg(true, 0, 1, 0, []byte{1, 2}))
	assert.ErrorIs(t, err, errLocalCatastrophic)
	assert.ErrorIs(t, err, errTargetLength)
}

// An error returned by ULP.Deliver fails the stream with Message set.
func TestReceiverDeliverError(t *testing.T) {
	r, u := newRx(t, 1)
	u.deliverErr = func(m *Message) error {
		if m.Cookie == 2 {
			return errTestULP
		}
		return nil
	}
	post(t, r, 0, make([]byte, 4), 1)
	post(t, r, 0, make([]byte, 4), 2)
	post(t, r, 0, make([]byte, 4), 3)
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, 1, 0, []byte("a"))))
	seg := untaggedSeg(true, 0, 2, 0, []byte("bc"))
	err := r.HandleSegment(seg)
	var re *RecvError
	require.ErrorAs(t, err, &re)
	assert.ErrorIs(t, err, errTestULP)
	require.NotNil(t, re.Message)
	assert.Equal(t, uint64(2), re.Message.Cookie)
	assert.Equal(t, []byte("bc"), re.Message.Buffer)
	assert.Equal(t, seg[:iwarpwire.DDPUntaggedHeaderLen], re.Header)
	assert.Equal(t, len(seg), re.SegmentLen)
	_, failed := u.snapshot()
	require.Len(t, failed, 1)
	drained := r.drain()
	require.Len(t, drained, 1, "the delivered message's buffer belongs to the ULP")
	assert.Equal(t, posted{QN: 0, MSN: 3, Cookie: 3, Buf: drained[0].Buf}, drained[0])
}

// Drain returns every undelivered buffer with qn/msn/cookie (RFC 5041
// §6.2.2: complete outstanding requests with an error); afterwards posting
// fails and segments are dropped without calling Failed.
func TestReceiverDrain(t *testing.T) {
	r, u := newRx(t, 4)
	b1, b2, b3, b4 := make([]byte, 8), make([]byte, 8), make([]byte, 8), make([]byte, 8)
	post(t, r, 0, b1, 10)
	post(t, r, 0, b2, 11)
	post(t, r, 3, b3, 30)
	post(t, r, 1, b4, 20)
	require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, 1, 0, []byte("x"))))
	require.NoError(t, r.HandleSegment(untaggedSeg(false, 0, 2, 0, []byte("partial"))))
	got := r.drain()
	require.Len(t, got, 3)
	assert.Equal(t, posted{QN: 0, MSN: 2, Cookie: 11, Buf: b2}, got[0])
	assert.Equal(t, posted{QN: 1, MSN: 1, Cookie: 20, Buf: b4}, got[1])
	assert.Equal(t, posted{QN: 3, MSN: 1, Cookie: 30, Buf: b3}, got[2])
	for qn := uint32(0); qn < 4; qn++ {
		assert.Zero(t, r.Posted(qn))
	}
	assert.Empty(t, r.drain())

	_, err := r.PostUntagged(0, make([]byte, 1), 1)
	assert.ErrorIs(t, err, errStopped)
	err = r.HandleSegment(untaggedSeg(true, 0, 3, 0, nil))
	assert.ErrorIs(t, err, errStopped)
	err = r.HandleSegment(taggedSeg(true, 0, 1, 0, nil))
	assert.ErrorIs(t, err, errStopped)
	delivered, failed := u.snapshot()
	assert.Empty(t, failed)
	assert.Len(t, delivered, 1)
}

func TestReceiverHandleClosedOnce(t *testing.T) {
	r, u := newRx(t, 1)
	post(t, r, 0, make([]byte, 1), 1)
	r.HandleClosed(nil)
	r.HandleClosed(llp.ErrAborted)
	u.mu.Lock()
	assert.Equal(t, []error{nil}, u.closed)
	u.mu.Unlock()
	_, err := r.PostUntagged(0, nil, 2)
	assert.ErrorIs(t, err, errStopped)
	assert.ErrorIs(t, err, llp.ErrClosed)
	assert.Len(t, r.drain(), 1, "buffers posted before the close are still returned")

	r, u = newRx(t, 1)
	r.HandleClosed(llp.ErrAborted)
	_, err = r.PostUntagged(0, nil, 2)
	assert.ErrorIs(t, err, llp.ErrAborted)
	u.mu.Lock()
	assert.Equal(t, []error{llp.ErrAborted}, u.closed)
	u.mu.Unlock()
}

func TestReceiverPostErrors(t *testing.T) {
	r, _ := newRx(t, 2)
	_, err := r.PostUntagged(2, nil, 0)
	assert.ErrorIs(t, err, errBadQueue)
	assert.Zero(t, r.Posted(2))
	assert.Zero(t, r.Posted(math.MaxUint32))
	assert.Panics(t, func() { newReceiver(newTestULP(), 0) })
	assert.Panics(t, func() { newReceiver(nil, 4) })
}

// repostULP re-posts every delivered buffer from inside Deliver.
type repostULP struct {
	*testULP
	r *Receiver
}

func (p *repostULP) Deliver(m *Message) error {
	if err := p.testULP.Deliver(m); err != nil {
		return err
	}
	_, err := p.r.PostUntagged(m.Untag.QN, m.Buffer[:cap(m.Buffer)], m.Cookie+100)
	return err
}

// The ULP may post from inside its callbacks while other goroutines post
// and inspect queues concurrently.
func TestReceiverConcurrentPosting(t *testing.T) {
	u := newTestULP()
	p := &repostULP{testULP: u}
	r := newReceiver(p, 2)
	p.r = r
	post(t, r, 0, make([]byte, 16), 0)

	var wg sync.WaitGroup
	const extra = 500
	wg.Go(func() {
		for i := 0; i < extra; i++ {
			if _, err := r.PostUntagged(1, make([]byte, 4), uint64(i)); err != nil {
				t.Error(err)
				return
			}
			_ = r.Posted(0)
		}
	})
	for msn := uint32(1); msn <= 1000; msn++ {
		require.NoError(t, r.HandleSegment(untaggedSeg(true, 0, msn, 0, []byte{byte(msn)})))
	}
	wg.Wait()
	delivered, failed := u.snapshot()
	assert.Empty(t, failed)
	require.Len(t, delivered, 1000)
	for i, m := range delivered {
		assert.Equal(t, uint64(100*i), m.Cookie)
	}
	assert.Equal(t, extra, r.Posted(1))
	assert.Equal(t, 1, r.Posted(0))
}

// placement bookkeeping unit test: merging of out-of-order ranges.
func TestPlacementMerging(t *testing.T) {
	var p placement
	add := func(lo, hi uint64) {
		require.NoError(t, p.check(lo, hi, false))
		p.add(lo, hi)
	}
	add(10, 20)
	add(30, 40)
	add(20, 30) // bridges both
	assert.Equal(t, []span{{10, 40}}, p.extra)
	add(50, 60)
	add(45, 50) // merges with the following span
	assert.Equal(t, []span{{10, 40}, {45, 60}}, p.extra)
	add(0, 10)
	assert.Equal(t, uint64(40), p.prefix)
	assert.Equal(t, []span{{45, 60}}, p.extra)
	assert.ErrorIs(t, p.check(39, 41, false), errOverlap)
	assert.ErrorIs(t, p.check(44, 46, false), errOverlap)
	assert.ErrorIs(t, p.check(60, 61, true), errHole)
	add(40, 45)
	assert.Equal(t, uint64(60), p.prefix)
	assert.Empty(t, p.extra)
	require.NoError(t, p.check(60, 61, true))
	require.NoError(t, p.check(60, 60, true), "zero-length L at the end")
	assert.ErrorIs(t, p.check(59, 59, true), errBeyondLast)
}

// Steady-state placement and delivery allocate nothing.
func TestReceiverZeroAllocs(t *testing.T) {
	u := &benchULP{mem: make([]byte, 1<<20)}
	r := newReceiver(u, 4)
	u.r = r
	for i := 0; i < 4; i++ {
		_, err := r.PostUntagged(0, make([]byte, 4096), uint64(i))
		require.NoError(t, err)
	}
	payload := make([]byte, 1400)
	tagged := [][]byte{taggedSeg(false, 0x40, 1, 0, payload), taggedSeg(true, 0x40, 1, 1400, payload)}
	msn := uint32(1)
	var seg [3][]byte
	for i := range seg {
		seg[i] = untaggedSeg(i == 2, 0, 0, uint32(i*1000), payload[:1000])
	}
	allocs := testing.AllocsPerRun(200, func() {
		for _, s := range tagged {
			if err := r.HandleSegment(s); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range seg {
			setMSN(s, msn)
			if err := r.HandleSegment(s); err != nil {
				t.Fatal(err)
			}
		}
		msn++
	})
	assert.Zero(t, allocs)
	assert.Positive(t, u.n)
}

// setMSN rewrites the MSN of an untagged segment in place.
func setMSN(seg []byte, msn uint32) {
	seg[10], seg[11], seg[12], seg[13] = byte(msn>>24), byte(msn>>16), byte(msn>>8), byte(msn)
}

// benchULP places into one region and re-posts delivered buffers; it
// allocates nothing.
type benchULP struct {
	mem []byte
	r   *Receiver
	n   int
}

func (b *benchULP) TaggedTarget(h *iwarpwire.DDPTaggedHeader, n int) ([]byte, error) {
	if h.TO >= uint64(len(b.mem)) || h.TO+uint64(n) > uint64(len(b.mem)) {
		return nil, errBaseBounds
	}
	return b.mem[h.TO : h.TO+uint64(n)], nil
}
func (b *benchULP) CheckUntagged(*iwarpwire.DDPUntaggedHeader) error { return nil }
func (b *benchULP) Deliver(m *Message) error {
	b.n++
	if !m.Tagged {
		_, err := b.r.PostUntagged(m.Untag.QN, m.Buffer[:cap(m.Buffer)], m.Cookie)
		return err
	}
	return nil
}
func (b *benchULP) Failed(err *RecvError) { panic(err) }
func (b *benchULP) Closed(error)          {}

// BenchmarkPlaceTagged: one 1448-octet-MULPDU tagged segment per op, 64 KiB
// messages.
func BenchmarkPlaceTagged(b *testing.B) {
	u := &benchULP{mem: make([]byte, 64<<10)}
	r := newReceiver(u, 4)
	u.r = r
	var segs [][]byte
	const room = 1448 - iwarpwire.DDPTaggedHeaderLen
	for off := 0; off < 64<<10; off += room {
		n := min(room, 64<<10-off)
		segs = append(segs, taggedSeg(off+n == 64<<10, 0x40, 1, uint64(off), make([]byte, n)))
	}
	b.SetBytes(room)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := r.HandleSegment(segs[i]); err != nil {
			b.Fatal(err)
		}
		i++
		if i == len(segs) {
			i = 0
		}
	}
}

// BenchmarkPlaceUntagged: one 1448-octet-MULPDU untagged segment per op,
// 64 KiB messages, buffers re-posted on delivery.
func BenchmarkPlaceUntagged(b *testing.B) {
	u := &benchULP{}
	r := newReceiver(u, 4)
	u.r = r
	for i := 0; i < 4; i++ {
		if _, err := r.PostUntagged(0, make([]byte, 64<<10), uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	var segs [][]byte
	const room = 1448 - iwarpwire.DDPUntaggedHeaderLen
	for off := 0; off < 64<<10; off += room {
		n := min(room, 64<<10-off)
		segs = append(segs, untaggedSeg(off+n == 64<<10, 0, 1, uint32(off), make([]byte, n)))
	}
	b.SetBytes(room)
	b.ReportAllocs()
	i, msn := 0, uint32(1)
	for b.Loop() {
		setMSN(segs[i], msn)
		if err := r.HandleSegment(segs[i]); err != nil {
			b.Fatal(err)
		}
		i++
		if i == len(segs) {
			i = 0
			msn++
		}
	}
}
