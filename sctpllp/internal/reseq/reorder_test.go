package reseq

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/contract"
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
	r := New(sink.deliverChunk, 1<<20, nil)
	order := []uint16{2, 0, 3, 1, 5, 4}
	for _, ssn := range order {
		require.NoError(t, r.Push(ssn, backend.PPIDSegment, chunkWithSSN(ssn, byte(ssn))))
	}
	assert.Equal(t, []uint16{0, 1, 2, 3, 4, 5}, sink.ssns)
	for i, b := range sink.bodies {
		assert.Equal(t, byte(i), b[2])
	}
	n, oct := r.Pending()
	assert.Zero(t, n)
	assert.Equal(t, EarlyCost+MinRing*HeldEntryCost, oct, "only the short ring stays, for the next gap")
}

func TestReorder_Wraparound(t *testing.T) {
	sink := &recSink{}
	r := New(sink.deliverChunk, 1<<20, nil)
	r.next = 65534
	require.NoError(t, r.Push(0, backend.PPIDSegment, chunkWithSSN(0)))
	require.NoError(t, r.Push(65535, backend.PPIDSegment, chunkWithSSN(65535)))
	require.NoError(t, r.Push(65534, backend.PPIDSegment, chunkWithSSN(65534)))
	assert.Equal(t, []uint16{65534, 65535, 0}, sink.ssns)
}

// RFC 5043 §10: a DDP-SSN more than 32767 ahead, an old one or a duplicate
// is invalid.
func TestReorder_WindowViolations_RFC5043_10(t *testing.T) {
	r := New((&recSink{}).deliverChunk, 1<<20, nil)
	require.NoError(t, r.Push(contract.MaxSSNWindow, backend.PPIDSegment, chunkWithSSN(contract.MaxSSNWindow)), "exactly 32767 ahead is legal")
	assert.ErrorIs(t, r.Push(contract.MaxSSNWindow+1, backend.PPIDSegment, chunkWithSSN(0)), ErrSSNWindow)
	assert.ErrorIs(t, r.Push(contract.MaxSSNWindow, backend.PPIDSegment, chunkWithSSN(0)), ErrSSNWindow, "duplicate of held")
	require.NoError(t, r.Push(0, backend.PPIDSegment, chunkWithSSN(0)))
	assert.ErrorIs(t, r.Push(0, backend.PPIDSegment, chunkWithSSN(0)), ErrSSNWindow, "already delivered")
	assert.ErrorIs(t, r.Push(65535, backend.PPIDSegment, chunkWithSSN(0)), ErrSSNWindow, "behind")
	r.Release()
}

// The per-stream bound counts what is held: a 60-octet chunk costs its
// 512-octet buffer, its header, the ring and the bookkeeping.
func TestReorder_HeldLimit(t *testing.T) {
	first := EarlyCost + MinRing*HeldEntryCost + BufCost(60)
	r := New((&recSink{}).deliverChunk, first+BufCost(40), nil)
	require.NoError(t, r.Push(1, backend.PPIDSegment, make([]byte, 60)))
	_, oct := r.Pending()
	assert.Equal(t, first, oct)
	assert.ErrorIs(t, r.Push(2, backend.PPIDSegment, make([]byte, 513)), ErrHeldLimit, "a 1 KiB buffer does not fit")
	require.NoError(t, r.Push(2, backend.PPIDSegment, make([]byte, 40)))
	_, oct = r.Pending()
	assert.Equal(t, first+BufCost(40), oct)
	r.Release()
	_, oct = r.Pending()
	assert.Zero(t, oct)
}

func TestReorder_SinkErrorStopsDrain(t *testing.T) {
	sink := &recSink{failAt: 2}
	r := New(sink.deliverChunk, 1<<20, nil)
	require.NoError(t, r.Push(1, backend.PPIDSegment, chunkWithSSN(1)))
	require.NoError(t, r.Push(2, backend.PPIDSegment, chunkWithSSN(2)))
	require.Error(t, r.Push(0, backend.PPIDSegment, chunkWithSSN(0)))
	assert.Equal(t, []uint16{0, 1}, sink.ssns)
	r.Release()
}

type nopSink struct{}

func (nopSink) deliverChunk(uint16, uint32, []byte) error { return nil }

// The in-order path hands the caller's buffer through: 0 allocations.
func TestReorder_InOrderNoAlloc(t *testing.T) {
	r := New((nopSink{}).deliverChunk, 1<<20, nil)
	b := make([]byte, 1024)
	ssn := uint16(0)
	allocs := testing.AllocsPerRun(1000, func() {
		_ = r.Push(ssn, backend.PPIDSegment, b)
		ssn++
	})
	assert.Zero(t, allocs)
}

func BenchmarkReorderInOrder(b *testing.B) {
	r := New((nopSink{}).deliverChunk, 1<<20, nil)
	buf := make([]byte, 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	ssn := uint16(0)
	for b.Loop() {
		_ = r.Push(ssn, backend.PPIDSegment, buf)
		ssn++
	}
}

func BenchmarkReorderSwappedPairs(b *testing.B) {
	r := New((nopSink{}).deliverChunk, 1<<20, nil)
	buf := make([]byte, 1024)
	b.ReportAllocs()
	ssn := uint16(0)
	for b.Loop() {
		_ = r.Push(ssn+1, backend.PPIDSegment, buf)
		_ = r.Push(ssn, backend.PPIDSegment, buf)
		ssn += 2
	}
}

// An idle session, and one whose chunks all arrive in DDP-SSN order, holds
// no early-chunk state, and a Reorder stays small: every idle stream has
// one at each end.
func TestReorder_InOrderHoldsNoEarlyState(t *testing.T) {
	sink := &recSink{}
	r := New(sink.deliverChunk, 1<<20, nil)
	for ssn := range uint16(5) {
		require.NoError(t, r.Push(ssn, 16, chunkWithSSN(ssn, byte(ssn))))
	}
	assert.Nil(t, r.early, "in-order chunks make no early-chunk state")
	chunks, octets := r.Pending()
	assert.Zero(t, chunks)
	assert.Zero(t, octets)
	assert.True(t, r.GapSince().IsZero())
	assert.True(t, r.HeldAll(func(uint32, []byte) bool { return false }), "nothing held")
	r.Release() // a no-op without early state

	// An early chunk that is refused (beyond the held-octet limit) makes
	// nothing; a valid one makes it; the gap closes and the state stays,
	// empty.
	small := New((&recSink{}).deliverChunk, 4, nil)
	require.ErrorIs(t, small.Push(2, 16, chunkWithSSN(2, 1, 2, 3, 4)), ErrHeldLimit)
	assert.Nil(t, small.early, "a refused early chunk commits nothing")
	require.NoError(t, r.Push(6, 16, chunkWithSSN(6, 6)))
	require.NotNil(t, r.early)
	assert.False(t, r.GapSince().IsZero())
	require.NoError(t, r.Push(5, 16, chunkWithSSN(5, 5)))
	assert.Equal(t, []uint16{0, 1, 2, 3, 4, 5, 6}, sink.ssns)
	assert.True(t, r.GapSince().IsZero())

	assert.LessOrEqual(t, unsafe.Sizeof(Reorder{}), uintptr(40))
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
		acct := &Account{Acct: membudget.NewAccount(b, 1<<30)}
		sink := &recSink{}
		const limit = 256 << 10
		r := New(sink.deliverChunk, limit, acct)
		for i := 0; i+1 < len(ops); i += 2 {
			d := uint16(ops[i]) << 7 // 0..32640 ahead, 0 included
			if ops[i]&1 == 1 {
				d = uint16(ops[i] >> 1) // small offsets too
			}
			ssn := r.next + d
			body := chunkWithSSN(ssn, make([]byte, int(ops[i+1])*8)...)
			err := r.Push(ssn, backend.PPIDSegment, body)
			if err != nil {
				require.True(t, errors.Is(err, ErrSSNWindow) || errors.Is(err, ErrHeldLimit), "%v", err)
			}
			_, oct := r.Pending()
			require.Equal(t, int64(oct), b.Used())
			require.LessOrEqual(t, oct, limit)
		}
		for i := 1; i < len(sink.ssns); i++ {
			require.Equal(t, sink.ssns[i-1]+1, sink.ssns[i])
		}
		r.Release()
		require.Zero(t, b.Used())
	})
}

// BenchmarkReorderReverse: blocks of n chunks pushed in reverse DDP-SSN
// order (all but the first held, then all released); the cost per chunk
// does not grow with n (RFC 5043 §10's window is 32767).
func BenchmarkReorderReverse(b *testing.B) {
	for _, n := range []int{64, 4096, contract.MaxSSNWindow + 1} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			r := New((nopSink{}).deliverChunk, 1<<30, nil)
			buf := make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				base := r.next
				for i := n - 1; i >= 0; i-- {
					_ = r.Push(base+uint16(i), backend.PPIDSegment, buf)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
		})
	}
}

// TestReorder_AnyOrderLinear_RFC5043_10: the whole window of RFC 5043 §10
// (32767 chunks ahead) in reverse order, and a random permutation, come out
// in DDP-SSN order; each chunk is stored and found by its DDP-SSN, so the
// ring grows by doubling (at most 12 times) and nothing is walked per
// chunk. What was charged comes back to the last octet.
func TestReorder_AnyOrderLinear_RFC5043_10(t *testing.T) {
	t.Cleanup(func() { runtime.GC(); runtime.GC(); debug.FreeOSMemory() })
	b := membudget.New(1 << 30)
	acct := &Account{Acct: membudget.NewAccount(b, 1<<30)}
	const n = contract.MaxSSNWindow + 1
	for _, order := range []string{"reverse", "random"} {
		t.Run(order, func(t *testing.T) {
			sink := &recSink{}
			r := New(sink.deliverChunk, 1<<30, acct)
			r.next = 65000 // across the wrap
			ssns := make([]uint16, n)
			for i := range ssns {
				ssns[i] = r.next + uint16(n-1-i)
			}
			if order == "random" {
				rng := rand.New(rand.NewPCG(1, 2))
				rng.Shuffle(n, func(i, j int) { ssns[i], ssns[j] = ssns[j], ssns[i] })
			}
			first := r.next
			for _, ssn := range ssns {
				require.NoError(t, r.Push(ssn, backend.PPIDSegment, chunkWithSSN(ssn, byte(ssn))))
			}
			require.Len(t, sink.ssns, n)
			for i, ssn := range sink.ssns {
				require.Equal(t, first+uint16(i), ssn)
				require.Equal(t, byte(ssn), sink.bodies[i][2])
			}
			assert.Nil(t, r.early, "the long ring freed once empty")
			assert.Zero(t, b.Used())
			// At the peak: 32767 buffers of 512 octets, the 32768-entry
			// ring, the bookkeeping; never more.
			assert.LessOrEqual(t, b.Peak(), int64((n-1)*BufCost(3)+n*HeldEntryCost+EarlyCost))
		})
	}
}
