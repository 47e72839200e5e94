package ddp

import (
	"bytes"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/llp"
)

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

// checkTagged parses the recorded segments of one tagged message and checks
// RFC 5041 §4.1 (L only on the last), §5.2 (TO advances, size <= MULPDU) and
// that the payload reassembles.
func checkTagged(t *testing.T, s *recStream, ulp uint8, stag uint32, to uint64, msg []byte) {
	t.Helper()
	require.NotEmpty(t, s.segs)
	var got []byte
	next := to
	for i, b := range s.segs {
		var seg iwarpwire.DDPSegment
		require.NoError(t, iwarpwire.ParseDDPSegment(b, &seg))
		require.True(t, seg.Tagged)
		assert.LessOrEqual(t, len(b), s.asked[i], "segment %d within MULPDU", i)
		assert.Equal(t, i == len(s.segs)-1, seg.Tag.Last, "L only on the last segment (RFC 5041 §4.1)")
		assert.Equal(t, ulp, seg.Tag.RsvdULP)
		assert.Equal(t, stag, seg.Tag.STag)
		assert.Equal(t, next, seg.Tag.TO, "TO advances per segment (RFC 5041 §5.2)")
		if i < len(s.segs)-1 {
			assert.Equal(t, s.asked[i], len(b), "non-last segments fill the MULPDU")
		}
		next += uint64(len(seg.Payload))
		got = append(got, seg.Payload...)
	}
	assert.True(t, bytes.Equal(msg, got), "payload reassembles")
}

// checkUntagged is checkTagged for one untagged message (MO from 0).
func checkUntagged(t *testing.T, segs [][]byte, asked []int, ulp [5]byte, qn, msn uint32, msg []byte) {
	t.Helper()
	require.NotEmpty(t, segs)
	var got []byte
	for i, b := range segs {
		var seg iwarpwire.DDPSegment
		require.NoError(t, iwarpwire.ParseDDPSegment(b, &seg))
		require.False(t, seg.Tagged)
		assert.LessOrEqual(t, len(b), asked[i])
		assert.Equal(t, i == len(segs)-1, seg.Untag.Last)
		assert.Equal(t, iwarpwire.DDPUntaggedHeader{Last: seg.Untag.Last, RsvdULP: ulp, QN: qn, MSN: msn, MO: uint32(len(got))}, seg.Untag)
		got = append(got, seg.Payload...)
	}
	assert.True(t, bytes.Equal(msg, got))
}

// RFC 5041 §5.2 example: 2048 octets, initial TO 16384, MULPDU 1500 → TO
// 16384 with 1486 octets, TO 17870 with 562 octets.
func TestSendTagged_RFC5041_5_2_Example(t *testing.T) {
	s := &recStream{schedule: []int{1500}}
	msg := pattern(2048, 1)
	require.NoError(t, NewSender(s).SendTagged(0x40, 0xabc, 16384, msg))
	require.Len(t, s.segs, 2)
	checkTagged(t, s, 0x40, 0xabc, 16384, msg)
	assert.Len(t, s.segs[0], 1500)
	assert.Len(t, s.segs[1], iwarpwire.DDPTaggedHeaderLen+562)
	var seg iwarpwire.DDPSegment
	require.NoError(t, iwarpwire.ParseDDPSegment(s.segs[1], &seg))
	assert.Equal(t, uint64(17870), seg.Tag.TO)
}

// RFC 5041 §5.2 example: untagged 2048 octets, MULPDU 1500 → MO 0 with
// 1482 octets, MO 1482 with 566 octets.
func TestSendUntagged_RFC5041_5_2_Example(t *testing.T) {
	s := &recStream{schedule: []int{1500}}
	msg := pattern(2048, 2)
	msn, err := NewSender(s).SendUntagged([5]byte{0x41}, 0, msg)
	require.NoError(t, err)
	assert.Equal(t, uint32(1), msn, "RFC 5041 §4.3: initial MSN is 1")
	require.Len(t, s.segs, 2)
	checkUntagged(t, s.segs, s.asked, [5]byte{0x41}, 0, 1, msg)
	assert.Len(t, s.segs[0], 1500)
	assert.Len(t, s.segs[1], iwarpwire.DDPUntaggedHeaderLen+566)
}

// RFC 5041 §3 requirement 1: DDP adapts as the MULPDU changes; it is asked
// for every segment.
func TestSendMULPDUChangesMidMessage(t *testing.T) {
	sched := []int{1448, 600, 9000, 100, 16, 20, 1448}
	msg := pattern(13000, 3)
	s := &recStream{schedule: sched}
	require.NoError(t, NewSender(s).SendTagged(1, 2, 3, msg))
	checkTagged(t, s, 1, 2, 3, msg)
	for i := range s.asked {
		assert.Equal(t, sched[min(i, len(sched)-1)], s.asked[i])
	}
	assert.Len(t, s.segs[4], 16, "15-octet MULPDU+1: header plus one octet")

	s = &recStream{schedule: []int{1448, 19, 5000, 64}}
	sender := NewSender(s)
	msn, err := sender.SendUntagged([5]byte{1, 2, 3, 4, 5}, 3, msg)
	require.NoError(t, err)
	checkUntagged(t, s.segs, s.asked, [5]byte{1, 2, 3, 4, 5}, 3, msn, msg)
	assert.Len(t, s.segs[1], 19)
}

// Property: random messages and MULPDU schedules always segment correctly.
func TestSendRandomSegmentation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		sched := make([]int, 1+rng.IntN(20))
		for j := range sched {
			sched[j] = iwarpwire.DDPUntaggedHeaderLen + 1 + rng.IntN(3000)
		}
		msg := pattern(rng.IntN(20000), byte(i))
		s := &recStream{schedule: sched}
		to := rng.Uint64N(1 << 40)
		require.NoError(t, NewSender(s).SendTagged(byte(i), uint32(i), to, msg))
		checkTagged(t, s, byte(i), uint32(i), to, msg)

		s = &recStream{schedule: sched}
		_, err := NewSender(s).SendUntagged([5]byte{byte(i)}, 0, msg)
		require.NoError(t, err)
		checkUntagged(t, s.segs, s.asked, [5]byte{byte(i)}, 0, 1, msg)
	}
}

// RFC 5041 §5.2: a zero-length message is exactly one segment, with L set.
func TestSendZeroLength_RFC5041_5_2(t *testing.T) {
	s := &recStream{schedule: []int{1448}}
	sender := NewSender(s)
	require.NoError(t, sender.SendTagged(0x40, 1, 5, nil))
	msn, err := sender.SendUntagged([5]byte{0x43}, 0, []byte{})
	require.NoError(t, err)
	assert.Equal(t, uint32(1), msn)
	require.Len(t, s.segs, 2)
	assert.Equal(t, []byte{0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5}, s.segs[0])
	assert.Equal(t, []byte{0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, s.segs[1])
}

// RFC 5041 §4.3: MSN per QN, starting at 1, +1 per message, wrapping to 0
// after 0xFFFFFFFF.
func TestSendMSNPerQueueAndWrap_RFC5041_4_3(t *testing.T) {
	s := &recStream{schedule: []int{1448}}
	sender := NewSender(s)
	for qn := uint32(0); qn < 4; qn++ {
		assert.Equal(t, uint32(1), sender.nextMSN(qn))
	}
	for i := uint32(1); i <= 3; i++ {
		msn, err := sender.SendUntagged([5]byte{}, 0, []byte{1})
		require.NoError(t, err)
		assert.Equal(t, i, msn)
	}
	msn, err := sender.SendUntagged([5]byte{}, 1, nil)
	require.NoError(t, err)
	assert.Equal(t, uint32(1), msn, "independent per QN")
	assert.Equal(t, uint32(4), sender.nextMSN(0))
	assert.Equal(t, uint32(2), sender.nextMSN(1))

	sender.lastMSN[2] = 0xfffffffe
	for _, want := range []uint32{0xffffffff, 0, 1} {
		assert.Equal(t, want, sender.nextMSN(2))
		msn, err := sender.SendUntagged([5]byte{}, 2, []byte{9})
		require.NoError(t, err)
		assert.Equal(t, want, msn)
	}
	// QNs beyond RDMAP's four number their messages independently too.
	for _, want := range []uint32{1, 2} {
		msn, err := sender.SendUntagged([5]byte{}, 1000, nil)
		require.NoError(t, err)
		assert.Equal(t, want, msn)
	}
	assert.Equal(t, uint32(3), sender.nextMSN(1000))
	assert.Equal(t, uint32(1), sender.nextMSN(7))
	assert.Equal(t, uint32(2), sender.nextMSN(2))
}

func TestSendRejects(t *testing.T) {
	s := &recStream{schedule: []int{iwarpwire.DDPTaggedHeaderLen}}
	sender := NewSender(s)
	err := sender.SendTagged(0, 1, 0, []byte{1})
	assert.ErrorIs(t, err, errMULPDUTooSmall)
	err = sender.SendTagged(0, 1, 0, nil)
	assert.ErrorIs(t, err, errMULPDUTooSmall, "even a zero-length message needs header+1")
	s.schedule = []int{iwarpwire.DDPUntaggedHeaderLen}
	msn, err := sender.SendUntagged([5]byte{}, 0, []byte{1})
	assert.ErrorIs(t, err, errMULPDUTooSmall)
	assert.Zero(t, msn)
	assert.Equal(t, uint32(1), sender.nextMSN(0), "MSN not consumed when nothing was sent")
	assert.Empty(t, s.segs)

	// RFC 5041 §7.1 tagged check 5: TO + length must not wrap 64 bits.
	s.schedule = []int{1448}
	err = sender.SendTagged(0, 1, math.MaxUint64-9, make([]byte, 10))
	assert.ErrorIs(t, err, errTOWrapSend)
	require.NoError(t, sender.SendTagged(0, 1, math.MaxUint64-9, make([]byte, 9)))
	require.NoError(t, sender.SendTagged(0, 1, math.MaxUint64, nil), "zero length never wraps")
}

// The MULPDU shrinking below header+1 mid-message fails the message after
// the segments already handed to the LLP; the MSN stays consumed.
func TestSendMULPDUShrinksMidMessage(t *testing.T) {
	s := &recStream{schedule: []int{100, 100, 18}}
	sender := NewSender(s)
	msn, err := sender.SendUntagged([5]byte{}, 0, make([]byte, 1000))
	assert.ErrorIs(t, err, errMULPDUTooSmall)
	assert.Equal(t, uint32(1), msn)
	assert.Len(t, s.segs, 2)
	assert.Equal(t, uint32(2), sender.nextMSN(0))
}

func TestSendLLPErrorWrapped(t *testing.T) {
	s := &recStream{schedule: []int{100}, failAt: 1, err: llp.ErrClosed}
	sender := NewSender(s)
	err := sender.SendTagged(0, 1, 0, []byte("x"))
	assert.ErrorIs(t, err, llp.ErrClosed)
	msn, err := sender.SendUntagged([5]byte{}, 0, []byte("x"))
	assert.ErrorIs(t, err, llp.ErrClosed)
	assert.Zero(t, msn)
	assert.Equal(t, uint32(1), sender.nextMSN(0))

	s = &recStream{schedule: []int{100}, failAt: 3, err: llp.ErrAborted}
	sender = NewSender(s)
	msn, err = sender.SendUntagged([5]byte{}, 0, make([]byte, 500))
	assert.ErrorIs(t, err, llp.ErrAborted)
	assert.Equal(t, uint32(1), msn)
	assert.Equal(t, uint32(2), sender.nextMSN(0))
	assert.Len(t, s.segs, 2)
}

func TestSendZeroAllocs(t *testing.T) {
	d := &discardStream{mulpdu: 1448}
	sender := NewSender(d)
	msg := make([]byte, 64<<10)
	_, _ = sender.SendUntagged([5]byte{}, 0, msg) // first use of QN 0 fills the map
	allocs := testing.AllocsPerRun(20, func() {
		if err := sender.SendTagged(0x40, 1, 0, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := sender.SendUntagged([5]byte{0x41}, 0, msg); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

func BenchmarkSendTagged(b *testing.B) {
	for _, m := range []struct {
		name   string
		mulpdu int
	}{{"MULPDU1448", 1448}, {"MULPDU8K", 8192}} {
		b.Run(m.name, func(b *testing.B) {
			d := &discardStream{mulpdu: m.mulpdu}
			sender := NewSender(d)
			msg := make([]byte, 64<<10)
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				if err := sender.SendTagged(0x40, 1, 0, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSendUntagged(b *testing.B) {
	d := &discardStream{mulpdu: 1448}
	sender := NewSender(d)
	msg := make([]byte, 64<<10)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sender.SendUntagged([5]byte{0x41}, 0, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// batchStream is a recStream that is an llp.Batcher and records which
// segments came through SendSegmentMore.
type batchStream struct {
	recStream
	more    []bool
	flushes []int // the number of segments sent at each Flush
}

func (s *batchStream) SendSegment(hdr, payload []byte) error {
	s.more = append(s.more, false)
	return s.recStream.SendSegment(hdr, payload)
}

func (s *batchStream) SendSegmentMore(hdr, payload []byte) error {
	s.more = append(s.more, true)
	return s.recStream.SendSegment(hdr, payload)
}

func (s *batchStream) Flush() error {
	s.flushes = append(s.flushes, len(s.segs))
	return nil
}

// Over an llp.Batcher every segment of a message but the last (the one
// with L set, RFC 5041 §4.1) goes through SendSegmentMore, tagged and
// untagged; one-segment messages never do.
func TestSenderUsesBatcher(t *testing.T) {
	s := &batchStream{recStream: recStream{schedule: []int{32}}}
	snd := NewSender(s)
	require.NoError(t, snd.SendTagged(0x41, 7, 0, make([]byte, 40))) // 18+18+4
	_, err := snd.SendUntagged([5]byte{}, 0, make([]byte, 20))       // 14+6
	require.NoError(t, err)
	require.NoError(t, snd.SendTagged(0x41, 7, 0, []byte("one")))
	assert.Equal(t, []bool{true, true, false, true, false, false}, s.more)
	for i, seg := range s.segs {
		last := iwarpwire.DDPControl(seg[0])&iwarpwire.DDPControlLast != 0
		assert.Equal(t, !s.more[i], last, "segment %d", i)
	}
}

// SendUntaggedMore holds a whole message, its last segment (L set) too,
// where the LLP batches: the next SendUntagged's last segment or Flush
// sends it; SendUntagged after it is unchanged. Over an LLP that does not
// batch it is SendUntagged and Flush does nothing.
func TestSenderUntaggedMore(t *testing.T) {
	s := &batchStream{recStream: recStream{schedule: []int{64}}} // MULPDU 64: 46 octets after the header
	snd := NewSender(s)
	msn, err := snd.SendUntaggedMore([5]byte{}, 1, make([]byte, 16)) // one segment
	require.NoError(t, err)
	assert.Equal(t, uint32(1), msn)
	msn, err = snd.SendUntaggedMore([5]byte{}, 1, make([]byte, 60)) // 46 + 14
	require.NoError(t, err)
	assert.Equal(t, uint32(2), msn)
	require.NoError(t, snd.Flush())
	_, err = snd.SendUntagged([5]byte{}, 1, make([]byte, 4))
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, true, false}, s.more, "every segment of a held message goes through SendSegmentMore")
	assert.Equal(t, []int{3}, s.flushes)
	for i, seg := range s.segs {
		h, _, err := iwarpwire.ParseDDPUntaggedHeader(seg)
		require.NoError(t, err)
		assert.Equal(t, i != 1, h.Last, "segment %d", i)
	}

	plain := &recStream{schedule: []int{64}}
	snd = NewSender(plain)
	_, err = snd.SendUntaggedMore([5]byte{}, 1, make([]byte, 16))
	require.NoError(t, err)
	require.NoError(t, snd.Flush())
	assert.Len(t, plain.segs, 1)
}

// flooredStream is a recStream with a MULPDU floor (llp.Floored) that
// counts the MULPDU questions.
type flooredStream struct {
	recStream
	floor, asks int
}

func (s *flooredStream) MULPDU() int      { s.asks++; return s.recStream.MULPDU() }
func (s *flooredStream) MULPDUFloor() int { return s.floor }
func (s *flooredStream) SendSegment(hdr, payload []byte) error {
	return s.recStream.SendSegment(hdr, payload)
}

// A segment that fits in the LLP's floor (llp.Floored: an RFC 5043
// adaptation's MULPDU is never below 516, RFC 5043 §9) is sent without
// asking MULPDU; a longer message is still cut at the MULPDU of the moment,
// asked before each segment (RFC 5041 §5.2).
func TestSendFloorSkipsMULPDU(t *testing.T) {
	ls := &flooredStream{recStream: recStream{schedule: []int{1000}}, floor: 516}
	s := NewSender(ls)
	_, err := s.SendUntagged([5]byte{}, 0, make([]byte, 516-iwarpwire.DDPUntaggedHeaderLen))
	require.NoError(t, err)
	require.NoError(t, s.SendTagged(0, 1, 0, make([]byte, 516-iwarpwire.DDPTaggedHeaderLen)))
	assert.Zero(t, ls.asks, "segments within the floor")
	assert.Len(t, ls.segs, 2)

	_, err = s.SendUntagged([5]byte{}, 0, make([]byte, 1500))
	require.NoError(t, err)
	assert.Equal(t, 2, ls.asks, "1500 octets: two segments of at most 1000, each asked")
	require.Len(t, ls.segs, 4)
	assert.Len(t, ls.segs[2], 1000)
	assert.Len(t, ls.segs[3], iwarpwire.DDPUntaggedHeaderLen+1500-(1000-iwarpwire.DDPUntaggedHeaderLen))

	// A floor the LLP got wrong is the LLP's error, reported as such.
	bad := &flooredStream{recStream: recStream{schedule: []int{100}}, floor: 516}
	_, err = NewSender(bad).SendUntagged([5]byte{}, 0, make([]byte, 200))
	require.ErrorIs(t, err, llp.ErrSegmentTooLarge)
}
