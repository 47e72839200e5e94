package sctp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/seq"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// delivered collects what a Reassembler hands over, the way an
// association does: the chunk itself if Push says so, then Next.
type delivered struct {
	msgs []message
}

func (dl *delivered) push(t *testing.T, r *reassembler, d wire.Data) error {
	t.Helper()
	now, err := r.Push(&d)
	if err != nil {
		require.False(t, now)
		return err
	}
	if now {
		dl.msgs = append(dl.msgs, message{StreamID: d.StreamID, SSN: d.SSN, PPID: d.PPID, Unordered: d.Unordered,
			FirstTSN: d.TSN, LastTSN: d.TSN, Data: append([]byte(nil), d.UserData...)})
	}
	for m, ok := r.Next(); ok; m, ok = r.Next() {
		dl.msgs = append(dl.msgs, m)
	}
	return nil
}

func (dl *delivered) data() []string {
	var out []string
	for _, m := range dl.msgs {
		out = append(out, string(m.Data))
	}
	return out
}

// chunk is a DATA chunk of stream s; flags "B", "E", "BE" or "", U for
// unordered.
func chunk(tsn uint32, s, ssn uint16, flags string, data string) wire.Data {
	return wire.Data{TSN: tsn, StreamID: s, SSN: ssn, PPID: 16, UserData: []byte(data),
		Beginning: bytes.ContainsRune([]byte(flags), 'B'), Ending: bytes.ContainsRune([]byte(flags), 'E'),
		Unordered: bytes.ContainsRune([]byte(flags), 'U')}
}

func TestReassemblyUnorderedWhole_RFC9260_6_6(t *testing.T) {
	r := newReassembler(reassemblyConfig{Streams: 4, Budget: 100})
	d := chunk(10, 3, 77, "BEU", "segment")
	now, err := r.Push(&d)
	require.NoError(t, err)
	assert.True(t, now, "delivered from the packet: nothing copied, nothing held")
	assert.Zero(t, r.Held())
	assert.Equal(t, uint32(100), r.Window())
	_, ok := r.Next()
	assert.False(t, ok)
}

func TestReassemblyOrdered_RFC9260_6_5(t *testing.T) {
	r := newReassembler(reassemblyConfig{Streams: 2})
	var dl delivered
	require.NoError(t, dl.push(t, r, chunk(1, 0, 0, "BE", "s0 m0")))
	require.NoError(t, dl.push(t, r, chunk(3, 0, 2, "BE", "s0 m2")))
	require.NoError(t, dl.push(t, r, chunk(4, 1, 0, "BE", "s1 m0")))
	assert.Equal(t, cost(5), r.Held(), "m2 waits for m1, copied: charged its buffer and bookkeeping")
	require.NoError(t, dl.push(t, r, chunk(5, 0, 3, "BE", "s0 m3")))
	require.NoError(t, dl.push(t, r, chunk(2, 0, 1, "BE", "s0 m1")))
	assert.Equal(t, []string{"s0 m0", "s1 m0", "s0 m1", "s0 m2", "s0 m3"}, dl.data())
	assert.Zero(t, r.Held())
	assert.Zero(t, r.Pending())

	// A stream's order does not hold another stream back (§6.5), and an
	// unordered message overtakes (§6.6).
	require.NoError(t, dl.push(t, r, chunk(7, 1, 2, "BE", "s1 m2")))
	require.NoError(t, dl.push(t, r, chunk(8, 0, 4, "BE", "s0 m4")))
	require.NoError(t, dl.push(t, r, chunk(9, 1, 9, "BEU", "s1 u")))
	require.NoError(t, dl.push(t, r, chunk(6, 1, 1, "BE", "s1 m1")))
	assert.Equal(t, []string{"s0 m4", "s1 u", "s1 m1", "s1 m2"}, dl.data()[5:])
}

// An ordered message whose turn it is, while earlier ones of the stream
// still wait in Next, is queued behind them, not delivered from the packet.
func TestReassemblyOrderedBehindQueue_RFC9260_6_5(t *testing.T) {
	r := newReassembler(reassemblyConfig{Streams: 1})
	d1 := chunk(2, 0, 1, "BE", "m1")
	now, err := r.Push(&d1)
	require.NoError(t, err)
	require.False(t, now)
	d0 := chunk(1, 0, 0, "BE", "m0")
	now, err = r.Push(&d0)
	require.NoError(t, err)
	require.True(t, now, "m0 first, from the packet")
	require.Equal(t, 1, r.Pending())
	d2 := chunk(3, 0, 2, "BE", "m2")
	now, err = r.Push(&d2)
	require.NoError(t, err)
	assert.False(t, now, "m1 is still to be handed over: m2 goes behind it")
	var got []string
	for m, ok := r.Next(); ok; m, ok = r.Next() {
		got = append(got, string(m.Data))
	}
	assert.Equal(t, []string{"m1", "m2"}, got)
}

func TestReassemblyFragments_RFC9260_6_9(t *testing.T) {
	chunks := []wire.Data{
		chunk(100, 1, 5, "B", "Hello, "),
		chunk(101, 1, 5, "", "fragmented "),
		chunk(102, 1, 5, "", "SCTP "),
		chunk(103, 1, 5, "E", "world"),
	}
	perms := [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}}
	for _, unordered := range []bool{false, true} {
		for _, p := range perms {
			t.Run(fmt.Sprintf("U=%v order %v", unordered, p), func(t *testing.T) {
				r := newReassembler(reassemblyConfig{Streams: 2})
				if !unordered {
					// SSN 5 is its turn after 0..4.
					r.stream(1).next = 5
				}
				var dl delivered
				for k, i := range p {
					c := chunks[i]
					c.Unordered = unordered
					require.NoError(t, dl.push(t, r, c))
					if k < 3 {
						assert.Empty(t, dl.msgs, "incomplete")
					}
				}
				require.Len(t, dl.msgs, 1)
				m := dl.msgs[0]
				assert.Equal(t, "Hello, fragmented SCTP world", string(m.Data))
				assert.Equal(t, uint32(100), m.FirstTSN)
				assert.Equal(t, uint32(103), m.LastTSN)
				assert.Equal(t, uint16(1), m.StreamID)
				assert.Equal(t, unordered, m.Unordered)
				assert.Zero(t, r.Held())
				assert.Zero(t, r.Fragments())
			})
		}
	}
}

// Fragments of messages of several streams, across the TSN wrap, with an
// ordered fragmented message that must wait for the one before it.
func TestReassemblyInterleavedStreams_RFC9260_6_9(t *testing.T) {
	r := newReassembler(reassemblyConfig{Streams: 3})
	var dl delivered
	base := uint32(0xfffffffd)
	in := []wire.Data{
		chunk(base+3, 2, 1, "B", "s2m1-a "), // waits for s2 m0
		chunk(base+4, 2, 1, "E", "s2m1-b"),
		chunk(base+5, 0, 0, "BEU", "u"),
		chunk(base+0, 2, 0, "B", "s2m0-a "),
		chunk(base+6, 1, 0, "B", "s1m0-a "),
		chunk(base+1, 2, 0, "", "s2m0-b "),
		chunk(base+7, 1, 0, "E", "s1m0-b"),
		chunk(base+2, 2, 0, "E", "s2m0-c"),
	}
	for _, c := range in {
		require.NoError(t, dl.push(t, r, c))
	}
	assert.Equal(t, []string{"u", "s1m0-a s1m0-b", "s2m0-a s2m0-b s2m0-c", "s2m1-a s2m1-b"}, dl.data())
	assert.Zero(t, r.Held())
}

func TestReassemblyFragmentSequence_RFC9260_6_9(t *testing.T) {
	cases := []struct {
		name  string
		first wire.Data
		bad   wire.Data
	}{
		{"B after a fragment without E", chunk(1, 0, 0, "B", "a"), chunk(2, 0, 0, "B", "b")},
		{"a middle after a fragment with E", chunk(1, 0, 0, "E", "a"), chunk(2, 0, 1, "", "b")},
		{"another stream", chunk(1, 0, 0, "B", "a"), chunk(2, 1, 0, "", "b")},
		{"another SSN", chunk(1, 0, 0, "B", "a"), chunk(2, 0, 1, "E", "b")},
		{"another U bit", chunk(1, 0, 0, "B", "a"), chunk(2, 0, 0, "EU", "b")},
		{"before: E then a non-B", chunk(2, 0, 0, "E", "a"), chunk(1, 0, 0, "E", "b")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newReassembler(reassemblyConfig{Streams: 2})
			_, err := r.Push(&tc.first)
			require.NoError(t, err)
			held := r.Held()
			_, err = r.Push(&tc.bad)
			require.ErrorIs(t, err, errFragmentSequence)
			assert.Equal(t, held, r.Held(), "nothing kept")
			assert.Equal(t, uint64(1), r.Violations())
		})
	}
	// Unordered fragments ignore the SSN.
	r := newReassembler(reassemblyConfig{Streams: 1})
	var dl delivered
	require.NoError(t, dl.push(t, r, chunk(1, 0, 7, "BU", "a")))
	require.NoError(t, dl.push(t, r, chunk(2, 0, 9, "EU", "b")))
	assert.Equal(t, []string{"ab"}, dl.data())
}

func TestReassemblyStreamSequence_RFC9260_6_5(t *testing.T) {
	r := newReassembler(reassemblyConfig{Streams: 1})
	var dl delivered
	require.NoError(t, dl.push(t, r, chunk(1, 0, 0, "BE", "m0")))
	require.NoError(t, dl.push(t, r, chunk(3, 0, 2, "BE", "m2")))
	assert.ErrorIs(t, dl.push(t, r, chunk(4, 0, 0, "BE", "m0 again")), errStreamSequence, "delivered already")
	assert.ErrorIs(t, dl.push(t, r, chunk(5, 0, 2, "BE", "m2 again")), errStreamSequence, "held already")
	assert.ErrorIs(t, dl.push(t, r, chunk(6, 0, 0, "B", "m0 again")), errStreamSequence, "a fragment too")
	assert.ErrorIs(t, dl.push(t, r, chunk(7, 0, 1+1<<15, "BE", "undefined order")), errStreamSequence)
	// Two fragmented messages with one SSN: once one is complete, the
	// other's fragments are refused. The fragment kept before stays until
	// MakeRoom evicts it.
	require.NoError(t, dl.push(t, r, chunk(10, 0, 5, "B", "x")))
	require.NoError(t, dl.push(t, r, chunk(20, 0, 5, "B", "y")))
	require.NoError(t, dl.push(t, r, chunk(11, 0, 5, "E", "x")))
	assert.ErrorIs(t, dl.push(t, r, chunk(21, 0, 5, "E", "y")), errStreamSequence)
	assert.Equal(t, 3*cost(2), r.Held(), "m2 and message 5 wait for m1; one fragment of the second message 5")
	assert.Equal(t, uint64(5), r.Violations())
	require.NoError(t, dl.push(t, r, chunk(2, 0, 1, "BE", "m1")))
	assert.Equal(t, []string{"m0", "m1", "m2"}, dl.data())
}

func TestReassemblyInvalid_RFC9260_6_5(t *testing.T) {
	r := newReassembler(reassemblyConfig{Streams: 2})
	d := chunk(1, 2, 0, "BEU", "x")
	_, err := r.Push(&d)
	assert.ErrorIs(t, err, errInvalidStream, "answered with an Invalid Stream Identifier cause")
	d = chunk(1, 1, 0, "BEU", "")
	_, err = r.Push(&d)
	assert.ErrorIs(t, err, wire.ErrNoUserData)
	assert.Equal(t, uint64(2), r.Violations())

	d = chunk(5, 0, 0, "B", "a")
	_, err = r.Push(&d)
	require.NoError(t, err)
	now, err := r.Push(&d)
	require.NoError(t, err, "a duplicate TSN is ignored")
	assert.False(t, now)
	assert.Equal(t, cost(1), r.Held())

	z := newReassembler(reassemblyConfig{})
	assert.Equal(t, defaultReassemblyBudget, z.Budget())
	assert.Equal(t, 1, z.nStreams, "at least one inbound stream")
}

func TestReassemblyBudget_RFC9260_6_2(t *testing.T) {
	c := cost(6) // a small chunk: the smallest buffer and its bookkeeping
	r := newReassembler(reassemblyConfig{Streams: 1, Budget: c + c/2})
	var dl delivered
	require.NoError(t, dl.push(t, r, chunk(1, 0, 0, "B", "123456")))
	assert.Equal(t, c, r.Held(), "charged by the buffer held, not the octets")
	assert.Equal(t, uint32(c/2), r.Window(), "a_rwnd: the free budget")
	assert.True(t, r.Fits(c/2))
	assert.False(t, r.Fits(c/2+1))
	err := dl.push(t, r, chunk(2, 0, 0, "E", "12345"))
	require.ErrorIs(t, err, errReassemblyBudget)
	assert.Equal(t, uint64(1), r.Refused())
	assert.Equal(t, c, r.Held(), "nothing kept")

	// A whole unordered message is not held: it always passes.
	require.NoError(t, dl.push(t, r, chunk(3, 0, 0, "BEU", "a large unordered message")))
	// Nor is an ordered one whose turn it is; one that must wait is.
	r2 := newReassembler(reassemblyConfig{Streams: 1, Budget: c - 1})
	require.ErrorIs(t, dl.push(t, r2, chunk(2, 0, 1, "BE", "1234")), errReassemblyBudget)
	require.NoError(t, dl.push(t, r2, chunk(1, 0, 0, "BE", "1234")))

	// Memory handed out by Next leaves the budget.
	r3 := newReassembler(reassemblyConfig{Streams: 1, Budget: 2 * c})
	d := chunk(1, 0, 0, "BU", "1234")
	_, err = r3.Push(&d)
	require.NoError(t, err)
	d = chunk(2, 0, 0, "EU", "5678")
	_, err = r3.Push(&d)
	require.NoError(t, err)
	assert.Equal(t, cost(8), r3.Held(), "the message, put together, holds one small buffer")
	m, ok := r3.Next()
	require.True(t, ok)
	assert.Equal(t, "12345678", string(m.Data))
	assert.Zero(t, r3.Held())
	assert.Equal(t, uint32(2*c), r3.Window())
}

// With no room left, a DATA chunk below the highest TSN held makes room by
// evicting the highest TSNs held for reordering, which the caller reneges
// (RFC 9260 §6.2); one above them does not.
func TestReassemblyMakeRoom_RFC9260_6_2(t *testing.T) {
	c := cost(1) // every chunk here is small: one charge each
	r := newReassembler(reassemblyConfig{Streams: 2, Budget: 3 * c})
	var dl delivered
	require.NoError(t, dl.push(t, r, chunk(10, 0, 0, "B", "aaaa")))  // waits for 11
	require.NoError(t, dl.push(t, r, chunk(14, 1, 1, "BE", "bbbb"))) // waits for s1 m0
	require.NoError(t, dl.push(t, r, chunk(20, 0, 1, "BE", "cccc"))) // waits for s0 m0
	require.ErrorIs(t, dl.push(t, r, chunk(11, 0, 0, "E", "dd")), errReassemblyBudget)

	var reneged []uint32
	renege := func(tsn uint32) { reneged = append(reneged, tsn) }
	assert.False(t, r.MakeRoom(25, c, renege), "above everything held: dropped, nothing evicted")
	assert.Empty(t, reneged)
	require.True(t, r.MakeRoom(11, c, renege))
	assert.Equal(t, []uint32{20}, reneged, "the highest TSN goes first, and only as much as needed")
	assert.Equal(t, uint64(1), r.Evicted())
	require.NoError(t, dl.push(t, r, chunk(11, 0, 0, "E", "dd")))
	assert.Equal(t, []string{"aaaadd"}, dl.data())

	// Fragments go too, but never below the new TSN.
	r = newReassembler(reassemblyConfig{Streams: 1, Budget: 3 * c})
	for _, d := range []wire.Data{chunk(1, 0, 0, "BU", "11"), chunk(5, 0, 0, "BU", "22"), chunk(6, 0, 0, "U", "33")} {
		_, err := r.Push(&d)
		require.NoError(t, err)
	}
	reneged = nil
	assert.False(t, r.MakeRoom(3, 3*c, renege), "the fragment at TSN 1 stays")
	assert.Equal(t, []uint32{6, 5}, reneged)
	assert.Equal(t, c, r.Held())

	// An ordered message of several fragments is reneged TSN by TSN.
	r = newReassembler(reassemblyConfig{Streams: 1, Budget: 2 * c})
	for _, d := range []wire.Data{chunk(7, 0, 1, "B", "ab"), chunk(8, 0, 1, "E", "cd")} {
		_, err := r.Push(&d)
		require.NoError(t, err)
	}
	reneged = nil
	require.True(t, r.MakeRoom(3, 2*c, renege))
	assert.Equal(t, []uint32{8, 7}, reneged, "highest first, as fragments")
	assert.Zero(t, r.Held())
}

func TestReassemblyNoAllocs(t *testing.T) {
	r := newReassembler(reassemblyConfig{Streams: 16})
	payload := make([]byte, 1400)
	tsn := uint32(1)
	ssn := uint16(0)
	n := 0
	allocs := testing.AllocsPerRun(500, func() {
		d := wire.Data{Unordered: true, Beginning: true, Ending: true, TSN: tsn, StreamID: 3, PPID: 16, UserData: payload}
		if now, err := r.Push(&d); err != nil || !now {
			panic("not delivered at once")
		}
		o := wire.Data{Beginning: true, Ending: true, TSN: tsn + 1, StreamID: 5, SSN: ssn, PPID: 16, UserData: payload}
		if now, err := r.Push(&o); err != nil || !now {
			panic("not delivered at once")
		}
		for _, ok := r.Next(); ok; _, ok = r.Next() {
			n++
		}
		tsn += 2
		ssn++
	})
	assert.Zero(t, allocs, "whole messages in their turn: no copy, no allocation")
	assert.Zero(t, n)
}

// TestReassemblyRandom_RFC9260_6_9 sends random messages, ordered and
// unordered, whole and fragmented, on several streams, and delivers their
// chunks in a random order: every message arrives once, intact, and the
// ordered ones of each stream in SSN order.
func TestReassemblyRandom_RFC9260_6_9(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		const streams = 4
		r := newReassembler(reassemblyConfig{Streams: streams, Budget: 1 << 20})
		var chunks []wire.Data
		var want []message
		tsn := rng.Uint32()
		var ssn [streams]uint16
		for m := 0; m < 60; m++ {
			s := uint16(rng.IntN(streams))
			msg := message{StreamID: s, Unordered: rng.IntN(3) == 0, PPID: 16, FirstTSN: tsn}
			if !msg.Unordered {
				msg.SSN = ssn[s]
				ssn[s]++
			}
			msg.Data = make([]byte, 1+rng.IntN(50))
			for i := range msg.Data {
				msg.Data[i] = byte(rng.Uint32())
			}
			nfrag := 1 + rng.IntN(4)
			if nfrag > len(msg.Data) {
				nfrag = len(msg.Data)
			}
			cuts := []int{0}
			for len(cuts) < nfrag {
				cuts = append(cuts, 1+rng.IntN(len(msg.Data)-1))
				slices.Sort(cuts)
				cuts = slices.Compact(cuts)
			}
			cuts = append(cuts, len(msg.Data))
			for k := 0; k+1 < len(cuts); k++ {
				chunks = append(chunks, wire.Data{TSN: tsn, StreamID: s, SSN: msg.SSN, PPID: 16, Unordered: msg.Unordered,
					Beginning: k == 0, Ending: k+2 == len(cuts), UserData: msg.Data[cuts[k]:cuts[k+1]]})
				tsn++
			}
			msg.LastTSN = tsn - 1
			want = append(want, msg)
		}
		rng.Shuffle(len(chunks), func(i, j int) { chunks[i], chunks[j] = chunks[j], chunks[i] })
		var dl delivered
		for _, c := range chunks {
			require.NoError(t, dl.push(t, r, c), "seed %d", seed)
		}
		require.Len(t, dl.msgs, len(want), "seed %d", seed)
		byTSN := map[uint32]message{}
		for _, m := range want {
			byTSN[m.FirstTSN] = m
		}
		next := [streams]uint16{}
		for _, m := range dl.msgs {
			w, ok := byTSN[m.FirstTSN]
			require.True(t, ok, "seed %d: a message that was not sent, or twice", seed)
			delete(byTSN, m.FirstTSN)
			assert.Equal(t, w.Data, m.Data)
			assert.Equal(t, w.LastTSN, m.LastTSN)
			assert.Equal(t, w.StreamID, m.StreamID)
			assert.Equal(t, w.Unordered, m.Unordered)
			if !m.Unordered {
				assert.Equal(t, next[m.StreamID], m.SSN, "seed %d: in SSN order", seed)
				next[m.StreamID]++
			}
		}
		assert.Zero(t, r.Held())
		assert.Zero(t, r.Fragments())
	}
}

// checkReassembler checks the invariants of r: every held fragment in
// exactly one run of consecutive TSNs indexed by its ends, at most one
// boundary between messages in a run and no complete message, and the
// memory charged exactly that of the fragments, waiting messages and
// messages not yet handed out.
func checkReassembler(t *testing.T, r *reassembler) {
	t.Helper()
	held, frags := 0, 0
	for k := range r.runs {
		run := &r.runs[k]
		if run.count == 0 {
			continue
		}
		require.Equal(t, int32(k), r.ends[run.first])
		require.Equal(t, int32(k), r.ends[run.last])
		n, cuts := int32(0), 0
		tsn := run.first
		for j := run.head; j >= 0; j = r.frags[j].next {
			f := &r.frags[j]
			require.Equal(t, tsn, f.tsn, "consecutive TSNs")
			require.True(t, r.isSet(f.tsn))
			if f.flags&fE != 0 && j != run.tail {
				cuts++
				require.Equal(t, j, run.cutE)
				require.Equal(t, n+1, run.prefix)
			}
			held += cap(*f.buf) + fragOverhead
			n++
			tsn++
			if j == run.tail {
				require.Equal(t, int32(-1), f.next)
			}
		}
		require.Equal(t, run.count, n)
		require.Equal(t, run.last, tsn-1)
		require.LessOrEqual(t, cuts, 1)
		if cuts == 0 {
			require.Equal(t, int32(-1), run.cutE)
		}
		complete := r.frags[run.head].flags&fB != 0 && (cuts > 0 || r.frags[run.tail].flags&fE != 0)
		require.False(t, complete, "a complete message left in a run")
		frags += int(n)
	}
	require.Equal(t, frags, r.nFrags)
	require.Len(t, r.pend, r.nPend)
	require.Len(t, r.pendByLast, r.nPend)
	for key, m := range r.pend {
		held += m.cost
		require.Equal(t, key, r.pendByLast[m.LastTSN])
		require.True(t, seq.SSNGreater(m.SSN, r.streams[m.StreamID].next), "waits for an earlier SSN")
	}
	for _, m := range r.ready[r.head:] {
		held += m.cost
	}
	require.Equal(t, held, r.Held())
	require.Equal(t, int64(held), r.acct.Held())
}

// FuzzReassembler pushes peer-chosen chunks (any TSN, stream, SSN, flags,
// size) and evictions: it never panics, the budget holds, and what is
// held is exactly the octets of fragments, waiting messages and messages
// not yet handed out.
func FuzzReassembler(f *testing.F) {
	f.Add([]byte{0x01, 0, 0, 0x02, 5, 0x11, 1, 0, 0x03, 0, 0x0f, 0x22, 3})
	f.Add([]byte{0x02, 1, 1, 0x01, 9, 0, 0x03, 2, 2, 0xff, 0x80, 0x40})
	f.Fuzz(func(t *testing.T, ops []byte) {
		r := newReassembler(reassemblyConfig{Streams: 3, Budget: 64})
		payload := make([]byte, 40)
		for i := 0; i+3 <= len(ops); i += 3 {
			op, a, b := ops[i], ops[i+1], ops[i+2]
			if op == 0xff {
				r.MakeRoom(uint32(a), int(b), func(uint32) {})
			} else {
				d := wire.Data{TSN: uint32(a % 32), StreamID: uint16(b % 4), SSN: uint16(op>>4) % 4,
					Beginning: op&1 != 0, Ending: op&2 != 0, Unordered: op&4 != 0, UserData: payload[:int(b>>2)%len(payload)]}
				_, _ = r.Push(&d)
				if op&8 != 0 {
					for _, ok := r.Next(); ok; _, ok = r.Next() {
					}
				}
			}
			require.LessOrEqual(t, r.Held(), r.Budget())
			checkReassembler(t, r)
		}
	})
}

// The zero-window rule end to end (RFC 9260 §6.2): the TSNs MakeRoom
// evicts are reneged in the recvTracker, so the next SACK stops reporting
// them, and the sender retransmits them later.
func TestReassemblyMakeRoomWithTracker_RFC9260_6_2(t *testing.T) {
	tr := newRecvTracker(10, recvTrackerConfig{})
	c := cost(1)
	r := newReassembler(reassemblyConfig{Streams: 1, Budget: 3 * c})
	var dl delivered
	recv := func(c wire.Data) {
		t.Helper()
		if !r.Admit(&c, func(tsn uint32) {
			require.True(t, tr.Renege(tsn), "TSN %d was held beyond the cum ack", tsn)
		}) {
			return // dropped, not acknowledged
		}
		require.Equal(t, recvNew, tr.Observe(c.TSN))
		require.NoError(t, dl.push(t, r, c))
	}
	recv(chunk(12, 0, 0, "U", "aaaa"))
	recv(chunk(13, 0, 0, "EU", "bb"))
	recv(chunk(15, 0, 0, "BU", "xxx"))
	assert.Equal(t, 3*c, r.Held(), "full")
	assert.Equal(t, []wire.GapAckBlock{gb(3, 4), gb(6, 6)}, gaps(tr))
	recv(chunk(10, 0, 0, "BEU", "first")) // not held: needs no room
	recv(chunk(11, 0, 0, "BU", "cc"))
	assert.Equal(t, []string{"first", "ccaaaabb"}, dl.data())
	assert.Equal(t, uint64(1), r.Evicted(), "TSN 15, above 11, made room")
	assert.Equal(t, uint32(13), tr.CumTSN())
	assert.Equal(t, uint32(13), tr.Highest(), "TSN 15 was reneged")
	assert.Empty(t, gaps(tr), "the next SACK no longer reports it")
	assert.Zero(t, r.Held())

	// The sender retransmits it (§6.2.1 D iii); the rest follows.
	recv(chunk(16, 0, 0, "EU", "yyy"))
	recv(chunk(15, 0, 0, "BU", "xxx"))
	recv(chunk(14, 0, 0, "BEU", "z"))
	assert.Equal(t, []string{"first", "ccaaaabb", "xxxyyy", "z"}, dl.data())
	assert.Equal(t, uint32(16), tr.CumTSN())

	// Full, and the new chunk is above everything held: dropped.
	recv(chunk(17, 0, 0, "BU", "123456789"))
	recv(chunk(18, 0, 0, "U", "0"))
	recv(chunk(19, 0, 0, "U", "1"))
	recv(chunk(20, 0, 0, "U", "2"))
	assert.False(t, tr.Received(20), "dropped, not acknowledged")
	assert.Equal(t, uint32(19), tr.CumTSN())
}

func TestReassemblyHolds(t *testing.T) {
	r := newReassembler(reassemblyConfig{Streams: 2})
	for _, tc := range []struct {
		d    wire.Data
		want bool
	}{
		{chunk(1, 0, 9, "BEU", "x"), false},
		{chunk(1, 0, 0, "BE", "x"), false},
		{chunk(1, 0, 1, "BE", "x"), true},
		{chunk(1, 0, 0, "B", "x"), true},
		{chunk(1, 0, 0, "EU", "x"), true},
		{chunk(1, 7, 0, "BE", "x"), true},
	} {
		assert.Equal(t, tc.want, r.Holds(&tc.d), "%+v", tc.d)
	}
}
