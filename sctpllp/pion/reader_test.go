package pion

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// inbox collects what a transport delivers, per stream.
type inbox struct {
	mu  sync.Mutex
	got map[uint16][][]byte
}

func (b *inbox) deliver(sid uint16, _ uint32, p []byte) {
	b.mu.Lock()
	b.got[sid] = append(b.got[sid], bytes.Clone(p))
	b.mu.Unlock()
}

func (b *inbox) count(sid uint16) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.got[sid])
}

func startedPair(t *testing.T) (ct, st *transport, cin, sin *inbox) {
	t.Helper()
	ct, st, cerr, serr, _, _ := pionPipePair(t, Config{}, Config{})
	require.NoError(t, cerr)
	require.NoError(t, serr)
	cin, sin = &inbox{got: map[uint16][][]byte{}}, &inbox{got: map[uint16][][]byte{}}
	ct.Start(cin.deliver, func(error) {})
	st.Start(sin.deliver, func(error) {})
	return ct, st, cin, sin
}

// shortReaderIdle sets readerIdle to 1 ms until the test's transports
// are gone: registered before them, its cleanup runs after theirs.
func shortReaderIdle(t *testing.T) {
	old := readerIdle
	readerIdle = time.Millisecond
	t.Cleanup(func() { readerIdle = old })
}

// readers returns how many of tr's streams have a reader.
func readers(tr *transport) int {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	n := 0
	for _, ps := range tr.streams {
		if ps.running.Load() && !ps.eof.Load() {
			n++
		}
	}
	return n
}

// TestPion_IdleStreamsHoldNoReader: a stream that received nothing for
// readerIdle has no reader goroutine at either end (64 streams: the
// goroutine count falls back to what it was before they were used), and
// its next message, in either direction, is delivered all the same: the
// DATA chunk seen below pion starts a reader again; so does a message of
// the largest size after an idle period.
func TestPion_IdleStreamsHoldNoReader(t *testing.T) {
	ct, st, cin, sin := startedPair(t)
	const n = 64
	g0 := runtime.NumGoroutine()
	for round := 1; round <= 3; round++ {
		for sid := uint16(1); sid <= n; sid++ {
			require.NoError(t, ct.WriteMsg(sid, backend.PPIDSegment, []byte(fmt.Sprintf("to server %d/%d", sid, round))))
			require.NoError(t, st.WriteMsg(sid, backend.PPIDSegment, []byte(fmt.Sprintf("to client %d/%d", sid, round))))
		}
		for sid := uint16(1); sid <= n; sid++ {
			require.Eventually(t, func() bool { return sin.count(sid) == round && cin.count(sid) == round }, 5*time.Second, time.Millisecond,
				"round %d, stream %d", round, sid)
		}
		require.Eventually(t, func() bool { return readers(ct) == 0 && readers(st) == 0 }, 10*readerIdle+5*time.Second, 10*time.Millisecond,
			"round %d: idle streams keep no reader", round)
		assert.Less(t, runtime.NumGoroutine(), g0+8, "round %d: no goroutine per idle stream (%d streams)", round, n)
	}
	for sid := uint16(1); sid <= n; sid++ {
		assert.Equal(t, fmt.Sprintf("to server %d/3", sid), string(sin.got[sid][2]))
		assert.Equal(t, fmt.Sprintf("to client %d/3", sid), string(cin.got[sid][2]))
	}

	big := bytes.Repeat([]byte{0xA5}, ct.MaxMessage())
	require.NoError(t, ct.WriteMsg(7, backend.PPIDSegment, big))
	require.Eventually(t, func() bool { return sin.count(7) == 4 }, 5*time.Second, time.Millisecond)
	sin.mu.Lock()
	assert.Equal(t, big, sin.got[7][3])
	sin.mu.Unlock()
}

// TestPion_ReaderParkRace: with a reader idle time of 1 ms, messages sent
// with gaps around it make readers park and restart thousands of times,
// racing the DATA chunks that wake them (readerState); every message is
// delivered once and in order of arrival on each stream.
func TestPion_ReaderParkRace(t *testing.T) {
	shortReaderIdle(t)
	ct, st, _, sin := startedPair(t)
	const streams, msgs = 4, 300
	var wg sync.WaitGroup
	for sid := uint16(1); sid <= streams; sid++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range msgs {
				if err := ct.WriteMsg(sid, backend.PPIDSegment, []byte(fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(i%5) * 400 * time.Microsecond) // 0 to 1.6 ms
			}
		}()
	}
	wg.Wait()
	for sid := uint16(1); sid <= streams; sid++ {
		require.Eventually(t, func() bool { return sin.count(sid) == msgs }, 10*time.Second, time.Millisecond, "stream %d", sid)
	}
	time.Sleep(50 * time.Millisecond)
	for sid := uint16(1); sid <= streams; sid++ {
		assert.Equal(t, msgs, sin.count(sid), "stream %d: no message twice", sid)
	}
	require.Eventually(t, func() bool { return readers(st) == 0 }, 5*time.Second, time.Millisecond)
}

// TestPion_SlowPionLosesNoMessage: pion may get to a packet long after
// the transport saw it (a loaded host: the soak of 600 streams in CI lost
// two messages when readers were woken at sight, ran their period before
// pion had queued the message, and parked). Here every third packet
// reaches pion 5 ms after it was seen, five reader periods: every message
// still arrives, because readers are woken only once pion asks for the
// next packet.
func TestPion_SlowPionLosesNoMessage(t *testing.T) {
	shortReaderIdle(t)
	var n atomic.Int64
	slow := func() {
		if n.Add(1)%3 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	testAfterSniff.Store(&slow)
	t.Cleanup(func() { testAfterSniff.Store(nil) })
	ct, _, _, sin := startedPair(t)
	const streams, msgs = 8, 40
	for i := range msgs {
		for sid := uint16(1); sid <= streams; sid++ {
			require.NoError(t, ct.WriteMsg(sid, backend.PPIDSegment, []byte(fmt.Sprint(i))))
		}
		time.Sleep(3 * time.Millisecond)
	}
	for sid := uint16(1); sid <= streams; sid++ {
		require.Eventually(t, func() bool { return sin.count(sid) == msgs }, 10*time.Second, time.Millisecond, "stream %d", sid)
	}
}

// TestPion_WakeWhileParking forces the two windows in which a message
// races a reader that is parking (readerState), with the message queued
// in pion and no other traffic to come, so that a reader that parked
// wrongly would leave it undelivered:
//
//   - before the reader clears running: wake sets pending, sees running
//     and starts nobody; the parking reader must see pending and carry on;
//   - between clearing running and re-reading pending: wake starts a new
//     reader, which delivers the message; the parking one ends (that it
//     ends rather than reading beside the new one is not observable here:
//     both would time out and park).
func TestPion_WakeWhileParking(t *testing.T) {
	for _, afterClear := range []bool{false, true} {
		t.Run(fmt.Sprintf("afterClear=%v", afterClear), func(t *testing.T) {
			ct, st, _, sin := startedPair(t)
			const sid = 5
			require.NoError(t, ct.WriteMsg(sid, backend.PPIDSegment, []byte("first")))
			require.Eventually(t, func() bool { return sin.count(sid) == 1 }, 5*time.Second, time.Millisecond)
			st.mu.RLock()
			target := st.streams[sid]
			st.mu.RUnlock()
			require.NotNil(t, target)

			// The reader that delivered "first" parks one idle period
			// (readerIdle, 100 ms) after its period with the message.
			var fired atomic.Bool
			hookDone := make(chan error, 1)
			hook := func(ps *pionStream, stage bool) {
				if ps != target || stage != afterClear || !fired.CompareAndSwap(false, true) {
					return
				}
				err := ct.WriteMsg(sid, backend.PPIDSegment, []byte("second"))
				// Hold the parking reader in its window until pion has
				// queued the message and woken the stream: before the
				// clear, pending set (running still set: nobody started);
				// after it, a new reader started (running set again by
				// wake; that reader clears pending as it begins).
				woken := func() bool {
					if afterClear {
						return target.running.Load()
					}
					return target.pending.Load()
				}
				deadline := time.Now().Add(5 * time.Second)
				for err == nil && !woken() {
					if time.Now().After(deadline) {
						err = fmt.Errorf("the message never woke the stream")
					}
					time.Sleep(100 * time.Microsecond)
				}
				hookDone <- err
			}
			testPark.Store(&hook)
			t.Cleanup(func() { testPark.Store(nil) })

			select {
			case err := <-hookDone:
				require.NoError(t, err)
			case <-time.After(10*readerIdle + 5*time.Second):
				t.Fatal("the reader never parked")
			}
			require.Eventually(t, func() bool { return sin.count(sid) == 2 }, 10*readerIdle+5*time.Second, time.Millisecond,
				"the message that raced the parking reader is delivered")
			require.Eventually(t, func() bool { return readers(st) == 0 }, 10*readerIdle+5*time.Second, time.Millisecond,
				"and its reader parks afterwards")
			time.Sleep(2 * readerIdle)
			assert.Equal(t, 2, sin.count(sid), "delivered once")
			sin.mu.Lock()
			assert.Equal(t, "second", string(sin.got[sid][1]))
			sin.mu.Unlock()
		})
	}
}

// TestPion_ResetReachesParkedReader: the adaptation frees a stream
// identifier by resetting both directions (RFC 6525, RFC 5043 §6.6); a
// peer's reset of a stream whose reader had parked wakes it (the RE-CONFIG
// chunk seen below pion) so that the end is noticed and the identifier
// becomes free at both ends, and usable again.
func TestPion_ResetReachesParkedReader(t *testing.T) {
	ct, st, _, sin := startedPair(t)
	require.NoError(t, ct.WriteMsg(3, backend.PPIDSegment, []byte("before")))
	require.Eventually(t, func() bool { return sin.count(3) == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, st.WriteMsg(3, backend.PPIDSegment, []byte("back")))
	require.Eventually(t, func() bool { return readers(ct) == 0 && readers(st) == 0 }, 10*readerIdle+5*time.Second, 10*time.Millisecond)

	require.NoError(t, ct.ResetStream(3))
	require.NoError(t, st.ResetStream(3))
	require.Eventually(t, func() bool { return ct.StreamFree(3) && st.StreamFree(3) }, 10*time.Second, 10*time.Millisecond,
		"both directions reset, the identifier free at both ends")

	require.NoError(t, ct.WriteMsg(3, backend.PPIDSegment, []byte("after")))
	require.Eventually(t, func() bool { return sin.count(3) == 2 }, 5*time.Second, time.Millisecond)
	sin.mu.Lock()
	assert.Equal(t, "after", string(sin.got[3][1]))
	sin.mu.Unlock()
}

// sniffTransport is a transport with streams 1..n for sniff alone: each
// stream counts as having its reader, so sniff only marks them.
func sniffTransport(n int) *transport {
	t := &transport{streams: map[uint16]*pionStream{}}
	for sid := uint16(1); sid <= uint16(n); sid++ {
		ps := &pionStream{sid: sid}
		ps.running.Store(true)
		t.streams[sid] = ps
	}
	return t
}

func dataChunk(sid uint16, tsn uint32) []byte {
	d := wire.Data{Beginning: true, Ending: true, Unordered: true, TSN: tsn, StreamID: sid, PPID: backend.PPIDSegment, UserData: []byte("x")}
	return d.Append(nil)
}

// resetChunk is a RE-CONFIG chunk with an Outgoing SSN Reset Request
// (RFC 6525 §4.1) for sids (every stream when none).
func resetChunk(sids ...uint16) []byte {
	p := binary.BigEndian.AppendUint16(nil, uint16(wire.ParamOutgoingSSNReset))
	p = binary.BigEndian.AppendUint16(p, uint16(16+2*len(sids)))
	p = binary.BigEndian.AppendUint32(p, 7)  // request sequence number
	p = binary.BigEndian.AppendUint32(p, 6)  // response sequence number
	p = binary.BigEndian.AppendUint32(p, 99) // sender's last assigned TSN
	for _, s := range sids {
		p = binary.BigEndian.AppendUint16(p, s)
	}
	p = wire.Pad(p)
	c := []byte{byte(wire.ChunkReconfig), 0, 0, 0}
	binary.BigEndian.PutUint16(c[2:], uint16(4+len(p)))
	return append(c, p...)
}

func marks(t *transport) (pending, resetting []uint16) {
	for sid := uint16(1); int(sid) <= len(t.streams); sid++ {
		ps := t.streams[sid]
		if ps.pending.Load() {
			pending = append(pending, sid)
		}
		if ps.resetting.Load() {
			resetting = append(resetting, sid)
		}
	}
	return pending, resetting
}

// TestSniff: the DATA chunks of a packet mark their streams' readers
// (bundled chunks of one stream once; a stream the transport does not
// have is left to pion's accept path); an Outgoing SSN Reset Request marks
// the streams it names, or all when it names none; a malformed packet
// stops the walk without harm. Nothing is woken until wakeSniffed, which
// runs when pion asks for the next packet, the last one handled.
func TestSniff(t *testing.T) {
	for _, c := range []struct {
		name               string
		pkt                []byte
		pending, resetting []uint16
	}{
		{"bundled DATA", sctpPacket(dataChunk(2, 1), dataChunk(2, 2), dataChunk(5, 3), dataChunk(9, 4)), []uint16{2, 5}, nil},
		{"reset of two", sctpPacket(resetChunk(3, 4)), []uint16{3, 4}, []uint16{3, 4}},
		{"reset of all", sctpPacket(resetChunk()), []uint16{1, 2, 3, 4, 5, 6}, []uint16{1, 2, 3, 4, 5, 6}},
		{"reset of unknown", sctpPacket(resetChunk(40)), nil, nil},
		{"truncated after a chunk", sctpPacket(dataChunk(6, 1), []byte{0, 0, 0x40, 0})[:wire.HeaderLen+20], []uint16{6}, nil},
		{"header only", sctpPacket(), nil, nil},
		{"short", []byte{1, 2, 3}, nil, nil},
	} {
		tr := sniffTransport(6)
		tr.sniff(c.pkt)
		p, r := marks(tr)
		assert.Empty(t, p, "%s: nobody is woken before pion has handled the packet", c.name)
		assert.Empty(t, r, c.name)
		tr.wakeSniffed()
		p, r = marks(tr)
		assert.Equal(t, c.pending, p, c.name)
		assert.Equal(t, c.resetting, r, c.name)
	}
	tr := sniffTransport(6)
	pkt := sctpPacket(dataChunk(2, 1), dataChunk(3, 2))
	tr.sniff(pkt)
	tr.wakeSniffed()
	assert.Zero(t, testing.AllocsPerRun(100, func() { tr.sniff(pkt); tr.wakeSniffed() }), "a packet of DATA chunks costs no allocation")
}

// FuzzSniff: sniff reads packets from the peer before pion checks them;
// nothing a peer sends makes it panic or mark a stream the transport does
// not have.
func FuzzSniff(f *testing.F) {
	f.Add(sctpPacket(dataChunk(2, 1), dataChunk(5, 3)))
	f.Add(sctpPacket(resetChunk(3, 4)))
	f.Add(sctpPacket(resetChunk()))
	f.Add(sctpPacket(dataChunk(1, 1), resetChunk(1)))
	f.Fuzz(func(t *testing.T, p []byte) {
		tr := sniffTransport(6)
		tr.sniff(p)
		tr.wakeSniffed()
		assert.Len(t, tr.streams, 6)
	})
}

// TestPion_FirstPacketAfterHandshakeWakesReader: pion's read loop asks for
// its next packet as soon as the handshake is done, before the transport
// exists. The packet that call returns must be seen all the same: when it
// carries the peer's answer on a stream whose reader has parked (the
// answer came late: the first DATA was lost and retransmitted after RTO,
// RFC 9260 §6.3.3), nothing else would wake the reader, and the answer
// would sit in pion unread.
func TestPion_FirstPacketAfterHandshakeWakesReader(t *testing.T) {
	shortReaderIdle(t)
	for range 5 {
		ct, st, cin, sin := startedPair(t)
		require.NoError(t, ct.WriteMsg(1, backend.PPIDSegment, []byte("initiate")))
		require.Eventually(t, func() bool { return sin.count(1) == 1 }, 10*time.Second, time.Millisecond)
		require.Eventually(t, func() bool { return readers(ct) == 0 }, 10*time.Second, 100*time.Microsecond, "the client's reader parks")
		require.NoError(t, st.WriteMsg(1, backend.PPIDSegment, []byte("accept")))
		require.Eventually(t, func() bool { return cin.count(1) == 1 }, 10*time.Second, time.Millisecond, "the answer is delivered")
		require.NoError(t, ct.Abort())
		require.NoError(t, st.Abort())
	}
}
