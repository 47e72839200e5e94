package sctpllp

import (
	"encoding/binary"
	"errors"
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

type recSink struct {
	ssns   []uint16
	bodies [][]byte
	failAt int
}

func (r *recSink) deliverChunk(ssn uint16, _ uint32, chunk []byte) error {
	r.ssns = append(r.ssns, ssn)
	r.bodies = append(r.bodies, append([]byte(nil), chunk...))
	if r.failAt > 0 && len(r.ssns) == r.failAt {
		return errors.New("sink stop")
	}
	return nil
}

func chunkWithSSN(ssn uint16, body ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, ssn)
	return append(b, body...)
}

// RFC 5043 §5.2.1, §10: chunks are restored to DDP-SSN order.
func TestReorder_OutOfOrder_RFC5043_10(t *testing.T) {
	sink := &recSink{}
	r := newReorder(sink, 1<<20, nil)
	order := []uint16{2, 0, 3, 1, 5, 4}
	for _, ssn := range order {
		require.NoError(t, r.push(ssn, backend.PPIDSegment, chunkWithSSN(ssn, byte(ssn))))
	}
	assert.Equal(t, []uint16{0, 1, 2, 3, 4, 5}, sink.ssns)
	for i, b := range sink.bodies {
		assert.Equal(t, byte(i), b[2])
	}
	n, oct := r.pending()
	assert.Zero(t, n)
	assert.Equal(t, earlyCost+minRing*heldEntryCost, oct, "only the short ring stays, for the next gap")
}

func TestReorder_Wraparound(t *testing.T) {
	sink := &recSink{}
	r := newReorder(sink, 1<<20, nil)
	r.next = 65534
	require.NoError(t, r.push(0, backend.PPIDSegment, chunkWithSSN(0)))
	require.NoError(t, r.push(65535, backend.PPIDSegment, chunkWithSSN(65535)))
	require.NoError(t, r.push(65534, backend.PPIDSegment, chunkWithSSN(65534)))
	assert.Equal(t, []uint16{65534, 65535, 0}, sink.ssns)
}

// RFC 5043 §10: a DDP-SSN more than 32767 ahead, an old one or a duplicate
// is invalid.
func TestReorder_WindowViolations_RFC5043_10(t *testing.T) {
	r := newReorder(&recSink{}, 1<<20, nil)
	require.NoError(t, r.push(backend.MaxSSNWindow, backend.PPIDSegment, chunkWithSSN(backend.MaxSSNWindow)), "exactly 32767 ahead is legal")
	assert.ErrorIs(t, r.push(backend.MaxSSNWindow+1, backend.PPIDSegment, chunkWithSSN(0)), errSSNWindow)
	assert.ErrorIs(t, r.push(backend.MaxSSNWindow, backend.PPIDSegment, chunkWithSSN(0)), errSSNWindow, "duplicate of held")
	require.NoError(t, r.push(0, backend.PPIDSegment, chunkWithSSN(0)))
	assert.ErrorIs(t, r.push(0, backend.PPIDSegment, chunkWithSSN(0)), errSSNWindow, "already delivered")
	assert.ErrorIs(t, r.push(65535, backend.PPIDSegment, chunkWithSSN(0)), errSSNWindow, "behind")
	r.release()
}

// The per-stream bound counts what is held: a 60-octet chunk costs its
// 512-octet buffer, its header, the ring and the bookkeeping.
func TestReorder_HeldLimit(t *testing.T) {
	first := earlyCost + minRing*heldEntryCost + bufCost(60)
	r := newReorder(&recSink{}, first+bufCost(40), nil)
	require.NoError(t, r.push(1, backend.PPIDSegment, make([]byte, 60)))
	_, oct := r.pending()
	assert.Equal(t, first, oct)
	assert.ErrorIs(t, r.push(2, backend.PPIDSegment, make([]byte, 513)), errHeldLimit, "a 1 KiB buffer does not fit")
	require.NoError(t, r.push(2, backend.PPIDSegment, make([]byte, 40)))
	_, oct = r.pending()
	assert.Equal(t, first+bufCost(40), oct)
	r.release()
	_, oct = r.pending()
	assert.Zero(t, oct)
}

func TestReorder_SinkErrorStopsDrain(t *testing.T) {
	sink := &recSink{failAt: 2}
	r := newReorder(sink, 1<<20, nil)
	require.NoError(t, r.push(1, backend.PPIDSegment, chunkWithSSN(1)))
	require.NoError(t, r.push(2, backend.PPIDSegment, chunkWithSSN(2)))
	require.Error(t, r.push(0, backend.PPIDSegment, chunkWithSSN(0)))
	assert.Equal(t, []uint16{0, 1}, sink.ssns)
	r.release()
}

type nopSink struct{}

func (nopSink) deliverChunk(uint16, uint32, []byte) error { return nil }

// The in-order path hands the caller's buffer through: 0 allocations.
func TestReorder_InOrderNoAlloc(t *testing.T) {
	r := newReorder(nopSink{}, 1<<20, nil)
	b := make([]byte, 1024)
	ssn := uint16(0)
	allocs := testing.AllocsPerRun(1000, func() {
		_ = r.push(ssn, backend.PPIDSegment, b)
		ssn++
	})
	assert.Zero(t, allocs)
}

func BenchmarkReorderInOrder(b *testing.B) {
	r := newReorder(nopSink{}, 1<<20, nil)
	buf := make([]byte, 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	ssn := uint16(0)
	for b.Loop() {
		_ = r.push(ssn, backend.PPIDSegment, buf)
		ssn++
	}
}

func BenchmarkReorderSwappedPairs(b *testing.B) {
	r := newReorder(nopSink{}, 1<<20, nil)
	buf := make([]byte, 1024)
	b.ReportAllocs()
	ssn := uint16(0)
	for b.Loop() {
		_ = r.push(ssn+1, backend.PPIDSegment, buf)
		_ = r.push(ssn, backend.PPIDSegment, buf)
		ssn += 2
	}
}

// An idle session, and one whose chunks all arrive in DDP-SSN order, holds
// no early-chunk state; the Session stays within Go's 320-octet size
// class, since every idle stream has one at each end (issue 21: at most
// 4 KiB per idle stream for both ends).
func TestReorder_InOrderHoldsNoEarlyState(t *testing.T) {
	sink := &recSink{}
	r := newReorder(sink, 1<<20, nil)
	for ssn := range uint16(5) {
		require.NoError(t, r.push(ssn, 16, chunkWithSSN(ssn, byte(ssn))))
	}
	assert.Nil(t, r.early, "in-order chunks make no early-chunk state")
	chunks, octets := r.pending()
	assert.Zero(t, chunks)
	assert.Zero(t, octets)
	assert.True(t, r.gapSince().IsZero())
	assert.True(t, r.heldAll(func(uint32, []byte) bool { return false }), "nothing held")
	r.release() // a no-op without early state

	// An early chunk that is refused (beyond the held-octet limit) makes
	// nothing; a valid one makes it; the gap closes and the state stays,
	// empty.
	small := newReorder(&recSink{}, 4, nil)
	require.ErrorIs(t, small.push(2, 16, chunkWithSSN(2, 1, 2, 3, 4)), errHeldLimit)
	assert.Nil(t, small.early, "a refused early chunk commits nothing")
	require.NoError(t, r.push(6, 16, chunkWithSSN(6, 6)))
	require.NotNil(t, r.early)
	assert.False(t, r.gapSince().IsZero())
	require.NoError(t, r.push(5, 16, chunkWithSSN(5, 5)))
	assert.Equal(t, []uint16{0, 1, 2, 3, 4, 5, 6}, sink.ssns)
	assert.True(t, r.gapSince().IsZero())

	assert.LessOrEqual(t, unsafe.Sizeof(reorder{}), uintptr(40))
	assert.LessOrEqual(t, unsafe.Sizeof(Session{}), uintptr(320))
}

// FuzzReorder: any sequence of DDP-SSNs and sizes (two octets each: an
// offset from the next expected DDP-SSN and a size) is delivered in
// consecutive DDP-SSN order or refused; what is charged always equals what
// pending reports, stays within the per-stream bound, and comes back to
// zero on release.
func FuzzReorder(f *testing.F) {
	f.Add([]byte{1, 10, 0, 5, 2, 200, 0, 1})
	f.Add([]byte{0xff, 0x7f, 0, 0, 3, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		b := membudget.New(1 << 30)
		acct := &heldAccount{acct: membudget.NewAccount(b, 1<<30)}
		sink := &recSink{}
		const limit = 256 << 10
		r := newReorder(sink, limit, acct)
		for i := 0; i+1 < len(ops); i += 2 {
			d := uint16(ops[i]) << 7 // 0..32640 ahead, 0 included
			if ops[i]&1 == 1 {
				d = uint16(ops[i] >> 1) // small offsets too
			}
			ssn := r.next + d
			body := chunkWithSSN(ssn, make([]byte, int(ops[i+1])*8)...)
			err := r.push(ssn, backend.PPIDSegment, body)
			if err != nil {
				require.True(t, errors.Is(err, errSSNWindow) || errors.Is(err, errHeldLimit), "%v", err)
			}
			_, oct := r.pending()
			require.Equal(t, int64(oct), b.Used())
			require.LessOrEqual(t, oct, limit)
		}
		for i := 1; i < len(sink.ssns); i++ {
			require.Equal(t, sink.ssns[i-1]+1, sink.ssns[i])
		}
		r.release()
		require.Zero(t, b.Used())
	})
}

// BenchmarkReorderReverse: blocks of n chunks pushed in reverse DDP-SSN
// order (all but the first held, then all released); the cost per chunk
// does not grow with n (RFC 5043 §10's window is 32767).
func BenchmarkReorderReverse(b *testing.B) {
	for _, n := range []int{64, 4096, backend.MaxSSNWindow + 1} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			r := newReorder(nopSink{}, 1<<30, nil)
			buf := make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				base := r.next
				for i := n - 1; i >= 0; i-- {
					_ = r.push(base+uint16(i), backend.PPIDSegment, buf)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
		})
	}
}
