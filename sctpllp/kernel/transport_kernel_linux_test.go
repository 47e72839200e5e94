//go:build linux

package kernel

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"net"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ishidawataru/sctp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/vmtest"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// TestKernelSCTP is the kernel SCTP backend's suite. It needs a kernel with
// SCTP: where the running kernel has none (the development and CI machines),
// it boots Debian's kernel under qemu (scripts/vm) and runs itself there.
// It never skips: a VM that cannot be set up fails the test.
func TestKernelSCTP(t *testing.T) {
	if !vmtest.KernelHasSCTP() {
		if vmtest.InVM() {
			t.Fatal("running in the test VM but the kernel has no SCTP: sctp.ko not loaded")
		}
		vmtest.RunInVM(t, ".", "^TestKernelSCTP$")
		return
	}
	t.Run("Setup", testKernelSetup)
	t.Run("StreamsAndPPIDs", testKernelStreamsAndPPIDs)
	t.Run("WireFormat", testKernelWireFormat)
	t.Run("MaxMessage", testKernelMaxMessage)
	t.Run("LargeMessages", testKernelLargeMessages)
	t.Run("MessageTooLarge", testKernelMessageTooLarge)
	t.Run("GracefulClose", testKernelGracefulClose)
	t.Run("Abort", testKernelAbort)
	t.Run("CloseUnblocks", testKernelCloseUnblocks)
	t.Run("ResetStream", testKernelResetStream)
	t.Run("AdaptationRequired", testKernelAdaptationRequired)
	t.Run("DialAndAcceptErrors", testKernelDialAcceptErrors)
	t.Run("WriteErrors", testKernelWriteErrors)
	t.Run("ZeroAlloc", testKernelZeroAlloc)
	t.Run("UDPEncapsulation", testKernelUDPEncapsulation)
	t.Run("ChunkWindow", testKernelChunkWindow)
	t.Run("LinkMTU", testKernelLinkMTU)
}

func TestKernelUnavailableWithoutSCTP(t *testing.T) {
	if vmtest.KernelHasSCTP() {
		// Covered by TestKernelSCTP; the error path needs a kernel without SCTP.
		_, err := listen("127.0.0.1:0", Config{Streams: 70000})
		require.Error(t, err)
		return
	}
	// The host kernel has no SCTP: both entry points say so, typed.
	_, err := dial(context.Background(), "127.0.0.1:9", Config{})
	require.ErrorIs(t, err, ErrUnavailable)
	_, err = listen("127.0.0.1:0", Config{})
	require.ErrorIs(t, err, ErrUnavailable)
}

// kernelPair returns an established client (dialer) and server (accepted)
// pair on 127.0.0.1.
func kernelPair(t *testing.T, server, client Config) (c, s *kernelTransport) {
	t.Helper()
	ln, err := listen("127.0.0.1:0", server)
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type res struct {
		tr  backend.Transport
		err error
	}
	ch := make(chan res, 1)
	go func() {
		tr, err := ln.Accept(ctx)
		ch <- res{tr, err}
	}()
	ct, err := dial(ctx, fmt.Sprintf("127.0.0.1:%d", ln.Addr().(*sctp.SCTPAddr).Port), client)
	require.NoError(t, err)
	r := <-ch
	require.NoError(t, r.err)
	return ct.(*kernelTransport), r.tr.(*kernelTransport)
}

type kmsg struct {
	sid  uint16
	ppid uint32
	data string
}

// ksink collects what a Transport delivers.
type ksink struct {
	msgs chan kmsg
	done chan error
}

func startSink(tr backend.Transport) *ksink {
	s := &ksink{msgs: make(chan kmsg, 4096), done: make(chan error, 1)}
	tr.Start(func(sid uint16, ppid uint32, b []byte) {
		s.msgs <- kmsg{sid, ppid, string(b)}
	}, func(err error) { s.done <- err })
	return s
}

func (s *ksink) next(t *testing.T) kmsg {
	t.Helper()
	select { // messages delivered before done come first
	case m := <-s.msgs:
		return m
	default:
	}
	select {
	case m := <-s.msgs:
		return m
	case err := <-s.done:
		// Both may have become ready while waiting (select then picks at
		// random): a message delivered before done still comes first.
		select {
		case m := <-s.msgs:
			s.done <- err
			return m
		default:
		}
		t.Fatalf("association ended while a message was expected: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no message within 20 s")
	}
	return kmsg{}
}

func (s *ksink) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("done not called within 20 s")
	}
	return nil
}

func testKernelSetup(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, s := kernelPair(t, Config{Streams: 32}, Config{Streams: 32})
	defer c.Abort()
	defer s.Abort()
	for _, tr := range []*kernelTransport{c, s} {
		assert.Equal(t, 32, tr.NumStreams(), "RFC 5043 §8: equal stream counts")
		ind, ok := tr.PeerAdaptation()
		assert.True(t, ok, "RFC 5043 §11.1: the adaptation indication is reported")
		assert.Equal(t, backend.AdaptationIndicationDDP, ind)
		assert.Equal(t, "sctp-kernel", tr.Kind())
	}
	assert.Equal(t, c.LocalAddr().(*sctp.SCTPAddr).Port, s.RemoteAddr().(*sctp.SCTPAddr).Port)
	assert.Equal(t, s.LocalAddr().(*sctp.SCTPAddr).Port, c.RemoteAddr().(*sctp.SCTPAddr).Port)
	assert.Equal(t, "sctp", c.LocalAddr().Network())

	// Unequal requests: the usable DDP streams are those present in both
	// directions (RFC 5043 §8 pairs inbound and outbound stream n).
	c2, s2 := kernelPair(t, Config{Streams: 20}, Config{Streams: 5})
	defer c2.Abort()
	defer s2.Abort()
	assert.Equal(t, 5, c2.NumStreams())
	assert.Equal(t, 5, s2.NumStreams())
}

func testKernelStreamsAndPPIDs(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const streams = 32
	c, s := kernelPair(t, Config{Streams: streams}, Config{Streams: streams})
	defer c.Abort()
	defer s.Abort()
	cs, ss := startSink(c), startSink(s)

	for _, dir := range []struct {
		name     string
		from     *kernelTransport
		to       *ksink
		fromName string
	}{{"client to server", c, ss, "c"}, {"server to client", s, cs, "s"}} {
		want := map[kmsg]int{}
		for sid := uint16(0); sid < streams; sid++ {
			for _, ppid := range []uint32{backend.PPIDSegment, backend.PPIDControl} {
				for i := 0; i < 3; i++ {
					m := kmsg{sid, ppid, fmt.Sprintf("%s|sid=%d|ppid=%d|%d", dir.fromName, sid, ppid, i)}
					// Two parts: the adaptation passes header and payload apart.
					require.NoError(t, dir.from.WriteMsg(sid, ppid, []byte(m.data[:3]), []byte(m.data[3:])))
					want[m]++
				}
			}
		}
		n := len(want)
		for i := 0; i < n; i++ {
			m := dir.to.next(t)
			require.Contains(t, want, m, dir.name)
			want[m]--
			if want[m] == 0 {
				delete(want, m)
			}
		}
		assert.Empty(t, want, dir.name)
	}
	// RFC 5043 §10: every DATA chunk is unordered (U=1); the receiver sees
	// SCTP_UNORDERED on every message.
	assert.Zero(t, c.orderedRecv.Load())
	assert.Zero(t, s.orderedRecv.Load())
	// The kernel reports its RTT and retransmission count (SCTP_STATUS,
	// SCTP_GET_ASSOC_STATS): data went both ways, so both ends measured.
	for _, k := range []*kernelTransport{c, s} {
		st := k.TransportStats()
		assert.True(t, st.HasSRTT, "SCTP_STATUS srtt")
		assert.Less(t, st.SRTT, 5*time.Second)
		assert.True(t, st.HasRetransmissions, "SCTP_GET_ASSOC_STATS")
		assert.Less(t, st.Retransmissions, uint64(1000))
	}
}

// sctpCapture reads copies of the SCTP packets on lo through a raw socket.
type sctpCapture struct {
	conn *net.IPConn
}

func newSCTPCapture(t *testing.T) *sctpCapture {
	t.Helper()
	c, err := net.ListenIP("ip4:132", &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err, "raw IPPROTO_SCTP socket (root in the VM)")
	return &sctpCapture{conn: c}
}

type sctpChunk struct {
	typ, flags uint8
	value      []byte
}

// chunks parses the chunks of one SCTP packet (RFC 9260 §3).
func sctpChunks(pkt []byte) []sctpChunk {
	var out []sctpChunk
	if len(pkt) < 12 {
		return nil
	}
	b := pkt[12:]
	for len(b) >= 4 {
		l := int(binary.BigEndian.Uint16(b[2:]))
		if l < 4 || l > len(b) {
			break
		}
		out = append(out, sctpChunk{typ: b[0], flags: b[1], value: b[4:l]})
		b = b[min((l+3)&^3, len(b)):]
	}
	return out
}

// collect reads packets until stop returns true for one of the chunks or
// the time is up.
func (c *sctpCapture) collect(t *testing.T, d time.Duration, stop func(sctpChunk) bool) {
	t.Helper()
	buf := make([]byte, 70000)
	c.conn.SetReadDeadline(time.Now().Add(d))
	for {
		n, _, err := c.conn.ReadFrom(buf)
		if err != nil {
			t.Fatalf("capture: %v", err)
		}
		for _, ch := range sctpChunks(buf[:n]) {
			if stop(ch) {
				return
			}
		}
	}
}

// adaptationParam finds the Adaptation Layer Indication (0xC006) among an
// INIT or INIT-ACK's parameters (after the 16 fixed octets).
func adaptationParam(value []byte) (uint32, bool) {
	if len(value) < 16 {
		return 0, false
	}
	p := value[16:]
	for len(p) >= 4 {
		typ, l := binary.BigEndian.Uint16(p), int(binary.BigEndian.Uint16(p[2:]))
		if l < 4 || l > len(p) {
			return 0, false
		}
		if typ == 0xC006 && l == 8 {
			return binary.BigEndian.Uint32(p[4:]), true
		}
		p = p[min((l+3)&^3, len(p)):]
	}
	return 0, false
}

func testKernelWireFormat(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	capt := newSCTPCapture(t)
	defer capt.conn.Close()

	c, s := kernelPair(t, Config{Streams: 8}, Config{Streams: 8})
	defer c.Abort()
	defer s.Abort()
	ss := startSink(s)

	// RFC 5043 §5.1, §11.1: INIT and INIT-ACK carry the Adaptation Layer
	// Indication 0x00000001.
	var initInd, initAckInd uint32
	var sawInit, sawInitAck bool
	capt.collect(t, 10*time.Second, func(ch sctpChunk) bool {
		switch ch.typ {
		case 1:
			initInd, sawInit = adaptationParam(ch.value)
		case 2:
			initAckInd, sawInitAck = adaptationParam(ch.value)
		}
		return sawInit && sawInitAck
	})
	assert.Equal(t, backend.AdaptationIndicationDDP, initInd, "INIT")
	assert.Equal(t, backend.AdaptationIndicationDDP, initAckInd, "INIT-ACK")

	// RFC 5043 §5.2, §10: DATA chunks with U=1 and PPID 16/17 in network
	// order on the wire.
	for _, ppid := range []uint32{backend.PPIDSegment, backend.PPIDControl} {
		payload := []byte(fmt.Sprintf("wire-check-%d", ppid))
		require.NoError(t, c.WriteMsg(5, ppid, payload))
		var data *sctpChunk
		capt.collect(t, 10*time.Second, func(ch sctpChunk) bool {
			if ch.typ == 0 && len(ch.value) >= 12 && bytes.Equal(ch.value[12:], payload) {
				data = &ch
				return true
			}
			return false
		})
		require.NotNil(t, data)
		assert.Equal(t, uint8(0x04|0x02|0x01), data.flags&0x07, "U, B and E set: unordered, unfragmented")
		assert.Equal(t, uint16(5), binary.BigEndian.Uint16(data.value[4:]), "stream identifier")
		assert.Equal(t, []byte{0, 0, 0, byte(ppid)}, data.value[8:12], "PPID in network order")
		m := ss.next(t)
		assert.Equal(t, kmsg{5, ppid, string(payload)}, m)
	}
}

func testKernelMaxMessage(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, s := kernelPair(t, Config{}, Config{})
	for _, tr := range []*kernelTransport{c, s} {
		var st sctp.Status
		l := uint32(unsafe.Sizeof(st))
		var err error
		tr.rc.Control(func(fd uintptr) {
			err = kernelGetsockopt(int(fd), sctp.SCTP_STATUS, unsafe.Pointer(&st), &l)
		})
		require.NoError(t, err)
		// Path MTU less IPv4 (20), SCTP common header (12) and DATA chunk
		// header (16), 4-aligned: lo's 65536 gives 65488.
		want := (int(st.PrimaryPeerAddr.MTU) - 20 - 12 - 16) &^ 3
		assert.Equal(t, want, tr.MaxMessage())
		assert.GreaterOrEqual(t, tr.MaxMessage(), iwarp.SCTPMinMULPDU)
	}
	c.Abort()
	s.Abort()

	// A fixed path MTU (as for a pion peer, PMTUD off): the largest
	// unfragmented message is 1200-48 octets; one more octet fragments
	// (RFC 5043 §9: MULPDU needs neither IP nor SCTP fragmentation).
	capt := newSCTPCapture(t)
	defer capt.conn.Close()
	c, s = kernelPair(t, Config{PathMTU: 1200}, Config{PathMTU: 1200})
	defer c.Abort()
	defer s.Abort()
	assert.Equal(t, 1152, c.MaxMessage())
	assert.Equal(t, 1152, s.MaxMessage())
	ss := startSink(s)
	for _, size := range []int{c.MaxMessage(), c.MaxMessage() + 1} {
		payload := bytes.Repeat([]byte{byte(size)}, size)
		require.NoError(t, c.WriteMsg(1, backend.PPIDSegment, payload))
		var first *sctpChunk
		capt.collect(t, 10*time.Second, func(ch sctpChunk) bool {
			if ch.typ == 0 && len(ch.value) > 12 && ch.value[12] == byte(size) && ch.flags&0x02 != 0 {
				first = &ch
				return true
			}
			return false
		})
		require.NotNil(t, first)
		if size == c.MaxMessage() {
			assert.Equal(t, uint8(0x03), first.flags&0x03, "MaxMessage octets fit one DATA chunk")
		} else {
			assert.Equal(t, uint8(0x02), first.flags&0x03, "one more octet is fragmented")
		}
		m := ss.next(t)
		assert.Equal(t, string(payload), m.data)
	}
}

func testKernelLargeMessages(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, s := kernelPair(t, Config{}, Config{})
	defer c.Abort()
	defer s.Abort()
	cs, ss := startSink(c), startSink(s)
	for _, size := range []int{1, 516, 65487, 65489, 200_000, 1 << 20} {
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = byte(i*7 + size)
		}
		require.NoError(t, c.WriteMsg(2, backend.PPIDSegment, payload[:size/2], payload[size/2:]))
		require.NoError(t, s.WriteMsg(3, backend.PPIDControl, payload))
		m := ss.next(t)
		assert.Equal(t, uint16(2), m.sid)
		assert.True(t, m.data == string(payload), "client to server, %d octets intact", size)
		m = cs.next(t)
		assert.Equal(t, uint16(3), m.sid)
		assert.True(t, m.data == string(payload), "server to client, %d octets intact", size)
	}
}

func testKernelMessageTooLarge(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, s := kernelPair(t, Config{MaxReceiveMessage: 128 << 10}, Config{})
	defer c.Abort()
	defer s.Abort()
	cs, ss := startSink(c), startSink(s)
	require.NoError(t, c.WriteMsg(0, backend.PPIDSegment, make([]byte, 100<<10)))
	assert.Len(t, ss.next(t).data, 100<<10)
	// Longer than the receiver accepts: never delivered in part, the
	// association is aborted.
	require.NoError(t, c.WriteMsg(0, backend.PPIDSegment, make([]byte, 300<<10)))
	err := ss.end(t)
	require.ErrorIs(t, err, errMessageTooLarge)
	assert.Empty(t, ss.msgs)
	err = cs.end(t)
	require.ErrorIs(t, err, llp.ErrAborted)
}

func testKernelGracefulClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, s := kernelPair(t, Config{}, Config{})
	cs, ss := startSink(c), startSink(s)
	const n = 300
	for i := 0; i < n; i++ {
		require.NoError(t, c.WriteMsg(uint16(i%8), backend.PPIDSegment, []byte(fmt.Sprint(i))))
	}
	// Everything written before Close is delivered, then the peer sees a
	// graceful end (RFC 4960 §9.2 SHUTDOWN).
	require.NoError(t, c.Close())
	got := map[string]bool{}
	for i := 0; i < n; i++ {
		got[ss.next(t).data] = true
	}
	assert.Len(t, got, n)
	assert.NoError(t, ss.end(t), "peer sees a graceful shutdown")
	assert.NoError(t, cs.end(t), "local Close ends gracefully")
	assert.ErrorIs(t, c.WriteMsg(0, backend.PPIDSegment, []byte("late")), llp.ErrClosed)
	assert.ErrorIs(t, s.WriteMsg(0, backend.PPIDSegment, []byte("late")), llp.ErrClosed)
	assert.NoError(t, c.Close(), "second Close")
	assert.NoError(t, s.Close(), "Close after the peer's shutdown")
	assert.NoError(t, s.Abort())

	// Close before Start drains and completes too.
	c, s = kernelPair(t, Config{}, Config{})
	ss = startSink(s)
	require.NoError(t, c.WriteMsg(1, backend.PPIDControl, []byte("x")))
	require.NoError(t, c.Close())
	assert.Equal(t, "x", ss.next(t).data)
	assert.NoError(t, ss.end(t))
	done := make(chan error, 1)
	c.Start(func(uint16, uint32, []byte) { t.Error("fn after Close") }, func(err error) { done <- err })
	assert.ErrorIs(t, <-done, llp.ErrClosed)
	s.Close()
}

func testKernelAbort(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, s := kernelPair(t, Config{}, Config{})
	cs, ss := startSink(c), startSink(s)
	require.NoError(t, c.WriteMsg(0, backend.PPIDSegment, []byte("before")))
	assert.Equal(t, "before", ss.next(t).data)
	require.NoError(t, c.Abort())
	err := ss.end(t)
	require.ErrorIs(t, err, llp.ErrAborted, "RFC 4960 §9.1 ABORT seen by the peer")
	err = cs.end(t)
	require.ErrorIs(t, err, llp.ErrAborted)
	assert.ErrorIs(t, c.WriteMsg(0, backend.PPIDSegment, []byte("late")), llp.ErrClosed)
	assert.Error(t, s.WriteMsg(0, backend.PPIDSegment, []byte("late")))
	assert.NoError(t, c.Abort())
	assert.NoError(t, s.Close())

	// Abort from inside fn does not deadlock, and fn is not called again.
	c, s = kernelPair(t, Config{}, Config{})
	var calls int
	var mu sync.Mutex
	sDone := make(chan error, 1)
	s.Start(func(uint16, uint32, []byte) {
		mu.Lock()
		calls++
		mu.Unlock()
		s.Abort()
	}, func(err error) { sDone <- err })
	cs = startSink(c)
	for i := 0; i < 20; i++ {
		if c.WriteMsg(0, backend.PPIDSegment, []byte("m")) != nil {
			break
		}
	}
	require.ErrorIs(t, <-sDone, llp.ErrAborted)
	require.ErrorIs(t, cs.end(t), llp.ErrAborted)
	mu.Lock()
	assert.Equal(t, 1, calls)
	mu.Unlock()
}

func testKernelCloseUnblocks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// Small buffers and a peer that never reads: the writer blocks in the
	// poller until Abort wakes it.
	c, s := kernelPair(t, Config{ReceiveBuffer: 64 << 10}, Config{SendBuffer: 64 << 10})
	startSink(c)
	blocked := make(chan error, 1)
	go func() {
		msg := make([]byte, 32<<10)
		for {
			if err := c.WriteMsg(0, backend.PPIDSegment, msg); err != nil {
				blocked <- err
				return
			}
		}
	}()
	select {
	case err := <-blocked:
		t.Fatalf("writer failed before blocking: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, c.Abort())
	select {
	case err := <-blocked:
		assert.ErrorIs(t, err, llp.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Abort did not unblock the writer")
	}
	s.Abort()

	// An idle reader is unblocked by Close and Abort alike.
	c, s = kernelPair(t, Config{}, Config{})
	cs, ss := startSink(c), startSink(s)
	require.NoError(t, s.Close())
	assert.NoError(t, ss.end(t))
	assert.NoError(t, cs.end(t))
	c.Close()
}

func testKernelResetStream(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, s := kernelPair(t, Config{Streams: 8}, Config{Streams: 8})
	defer c.Abort()
	defer s.Abort()
	require.Error(t, c.ResetStream(3), "before Start")
	cs, ss := startSink(c), startSink(s)
	require.NoError(t, c.WriteMsg(3, backend.PPIDControl, []byte("session 1")))
	assert.Equal(t, "session 1", ss.next(t).data)
	// RFC 6525 stream reset in both directions, so a later DDP session can
	// reuse the identifier (RFC 5043 §6.6).
	require.NoError(t, c.ResetStream(3))
	require.NoError(t, s.ResetStream(3))
	require.NoError(t, c.WriteMsg(3, backend.PPIDControl, []byte("session 2")))
	assert.Equal(t, kmsg{3, backend.PPIDControl, "session 2"}, ss.next(t))
	require.NoError(t, s.WriteMsg(3, backend.PPIDControl, []byte("reply 2")))
	assert.Equal(t, kmsg{3, backend.PPIDControl, "reply 2"}, cs.next(t))
	assert.ErrorIs(t, c.ResetStream(8), backend.ErrStreamRange)

	// Both ends reset at the same moment, as two DDP sessions ending
	// together do (RFC 5043 §6.6): no "in progress" deadlock, well within
	// the 5 s ResetTimeout.
	for _, sid := range []uint16{4, 5} {
		start := time.Now()
		errs := make(chan error, 2)
		go func() { errs <- c.ResetStream(sid) }()
		go func() { errs <- s.ResetStream(sid) }()
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
		assert.Less(t, time.Since(start), 3*time.Second, "concurrent reset of stream %d", sid)
		require.NoError(t, c.WriteMsg(sid, backend.PPIDControl, []byte("after concurrent reset")))
		assert.Equal(t, kmsg{sid, backend.PPIDControl, "after concurrent reset"}, ss.next(t))
	}
}

func testKernelAdaptationRequired(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	none := uint32(0)
	// A peer that sends no indication: reported as absent when allowed
	// (AllowMissingAdaptation), refused by default.
	c, s := kernelPair(t, Config{adaptation: &none}, Config{AllowMissingAdaptation: true})
	_, ok := c.PeerAdaptation()
	assert.False(t, ok, "listener sent no Adaptation Layer Indication")
	ind, ok := s.PeerAdaptation()
	assert.True(t, ok)
	assert.Equal(t, backend.AdaptationIndicationDDP, ind)
	c.Abort()
	s.Abort()

	ln, err := listen("127.0.0.1:0", Config{adaptation: &none})
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", ln.Addr().(*sctp.SCTPAddr).Port)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func(ln *listener) { // ln is reassigned below
		if tr, err := ln.Accept(ctx); err == nil {
			tr.Abort()
		}
	}(ln)
	_, err = dial(ctx, addr, Config{})
	require.ErrorIs(t, err, backend.ErrAdaptationMismatch, "RFC 5043 §5.1, §7.1: required by default")
	ln.Close()

	// A listener (by default) refuses (aborts) a peer without it and keeps
	// accepting.
	ln, err = listen("127.0.0.1:0", Config{})
	require.NoError(t, err)
	defer ln.Close()
	addr = fmt.Sprintf("127.0.0.1:%d", ln.Addr().(*sctp.SCTPAddr).Port)
	accepted := make(chan backend.Transport, 1)
	go func() {
		tr, err := ln.Accept(ctx)
		if err == nil {
			accepted <- tr
		}
		close(accepted)
	}()
	bad, err := dial(ctx, addr, Config{adaptation: &none})
	if err == nil { // else the ABORT came before the set-up finished
		bs := startSink(bad)
		err = bs.end(t)
	}
	require.ErrorIs(t, err, llp.ErrAborted)
	good, err := dial(ctx, addr, Config{})
	require.NoError(t, err)
	tr := <-accepted
	require.NotNil(t, tr)
	n, why := ln.refusedCount()
	assert.Equal(t, uint64(1), n, "the peer without DDP was refused")
	assert.ErrorIs(t, why, backend.ErrAdaptationMismatch)
	ind, ok = tr.PeerAdaptation()
	assert.True(t, ok)
	assert.Equal(t, backend.AdaptationIndicationDDP, ind)
	tr.Abort()
	good.Abort()
}

func testKernelDialAcceptErrors(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ln, err := listen("127.0.0.1:0", Config{})
	require.NoError(t, err)
	port := ln.Addr().(*sctp.SCTPAddr).Port
	require.NoError(t, ln.Close())

	// Nobody listening: the peer's ABORT fails the set-up.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = dial(ctx, fmt.Sprintf("127.0.0.1:%d", port), Config{})
	require.ErrorIs(t, err, unix.ECONNREFUSED, "as over every LLP (transport.DialError)")
	assert.Less(t, time.Since(start), 5*time.Second)

	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	_, err = dial(cctx, fmt.Sprintf("127.0.0.1:%d", port), Config{})
	require.Error(t, err)

	_, err = dial(ctx, "not an address", Config{})
	require.Error(t, err)
	_, err = dial(ctx, "127.0.0.1:1", Config{Streams: -1})
	require.Error(t, err)

	// Accept: a cancelled wait leaves the listener usable.
	ln, err = listen("127.0.0.1:0", Config{})
	require.NoError(t, err)
	actx, acancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err = ln.Accept(actx)
	acancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	addr := fmt.Sprintf("127.0.0.1:%d", ln.Addr().(*sctp.SCTPAddr).Port)
	got := make(chan error, 1)
	acc := make(chan backend.Transport, 1)
	go func() {
		tr, err := ln.Accept(ctx)
		acc <- tr
		got <- err
	}()
	c, err := dial(ctx, addr, Config{})
	// The accepted side is aborted only now: aborting it at once raced
	// with the dialer's own set-up, which then (rightly) reported
	// "association ended during set-up".
	if tr := <-acc; tr != nil {
		tr.Abort()
	}
	require.NoError(t, err)
	require.NoError(t, <-got)
	n, _ := ln.refusedCount()
	assert.Zero(t, n)
	c.Abort()

	// Close wakes a blocked Accept.
	go func() {
		_, err := ln.Accept(ctx)
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, ln.Close())
	require.ErrorIs(t, <-got, llp.ErrClosed)
}

func testKernelWriteErrors(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, s := kernelPair(t, Config{Streams: 4}, Config{Streams: 4})
	defer c.Abort()
	defer s.Abort()
	assert.ErrorIs(t, c.WriteMsg(4, backend.PPIDSegment, []byte("x")), backend.ErrStreamRange)
	assert.ErrorIs(t, c.WriteMsg(0, backend.PPIDSegment), backend.ErrEmptyMessage)
	assert.ErrorIs(t, c.WriteMsg(0, backend.PPIDSegment, nil, []byte{}), backend.ErrEmptyMessage)
}

func testKernelZeroAlloc(t *testing.T) {
	c, s := kernelPair(t, Config{}, Config{})
	defer c.Abort()
	defer s.Abort()
	got := make(chan struct{}, 1)
	s.Start(func(uint16, uint32, []byte) { got <- struct{}{} }, func(error) {})
	hdr, payload := make([]byte, 18), make([]byte, 1024)
	// Steady state: a segment written and delivered allocates nothing on
	// either side.
	allocs := testing.AllocsPerRun(200, func() {
		if err := c.WriteMsg(1, backend.PPIDSegment, hdr, payload); err != nil {
			panic(err)
		}
		<-got
		_ = c.MaxMessage()
	})
	assert.Zero(t, allocs)
}

// testKernelUDPEncapsulation runs an association over RFC 6951 UDP
// encapsulation (port 9899), the route to a userspace SCTP peer.
func testKernelUDPEncapsulation(t *testing.T) {
	if !vmtest.InVM() {
		// A host whose kernel has SCTP: net.sctp.udp_port is a host-wide
		// setting this test must not change there, so the subtest runs in
		// the test VM instead of passing without running.
		vmtest.RunInVM(t, ".", "^TestKernelSCTP$/^UDPEncapsulation$")
		return
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	require.NoError(t, os.WriteFile("/proc/sys/net/sctp/udp_port", []byte("9899"), 0))
	defer os.WriteFile("/proc/sys/net/sctp/udp_port", []byte("0"), 0)

	udp, err := net.ListenIP("ip4:17", &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer udp.Close()

	c, s := kernelPair(t, Config{}, Config{RemoteUDPEncapsPort: 9899})
	defer c.Abort()
	defer s.Abort()
	cs, ss := startSink(c), startSink(s)
	// The fragmentation point leaves room for the UDP header too.
	var st sctp.Status
	l := uint32(unsafe.Sizeof(st))
	c.rc.Control(func(fd uintptr) { err = kernelGetsockopt(int(fd), sctp.SCTP_STATUS, unsafe.Pointer(&st), &l) })
	require.NoError(t, err)
	assert.LessOrEqual(t, c.MaxMessage(), (int(st.PrimaryPeerAddr.MTU)-20-8-12-16)&^3, "path MTU %d", st.PrimaryPeerAddr.MTU)
	assert.Greater(t, c.MaxMessage(), int(st.PrimaryPeerAddr.MTU)-20-8-12-16-16, "path MTU %d", st.PrimaryPeerAddr.MTU)
	payload := []byte("over udp 9899")
	require.NoError(t, c.WriteMsg(1, backend.PPIDSegment, payload))
	assert.Equal(t, kmsg{1, backend.PPIDSegment, string(payload)}, ss.next(t))
	require.NoError(t, s.WriteMsg(1, backend.PPIDControl, payload))
	assert.Equal(t, kmsg{1, backend.PPIDControl, string(payload)}, cs.next(t))

	// The DATA chunk travelled inside UDP to port 9899.
	buf := make([]byte, 70000)
	udp.SetReadDeadline(time.Now().Add(5 * time.Second))
	found := false
	for !found {
		n, _, err := udp.ReadFrom(buf)
		require.NoError(t, err, "no encapsulated SCTP seen")
		if n < 8 || binary.BigEndian.Uint16(buf[2:]) != 9899 {
			continue
		}
		for _, ch := range sctpChunks(buf[8:n]) {
			if ch.typ == 0 && bytes.Contains(ch.value, payload) {
				found = true
			}
		}
	}
	assert.True(t, found)
}

// BenchmarkKernelSCTP measures the kernel backend on loopback; outside a
// kernel with SCTP it runs itself in the VM (TCG-emulated: compare figures
// only with each other).
func BenchmarkKernelSCTP(b *testing.B) {
	if !vmtest.KernelHasSCTP() {
		vmtest.RunInVM(b, ".", "^$", vmtest.WithArgs("-test.bench", "^BenchmarkKernelSCTP$", "-test.benchmem"))
		return
	}
	for _, size := range []int{64, 1024, 64 << 10} {
		b.Run(fmt.Sprintf("OneWay%dB", size), func(b *testing.B) {
			c, s := kernelPairB(b)
			defer c.Abort()
			defer s.Abort()
			var mu sync.Mutex
			got := 0
			all := make(chan struct{})
			s.Start(func(uint16, uint32, []byte) {
				mu.Lock()
				got++
				if got == b.N {
					close(all)
				}
				mu.Unlock()
			}, func(error) {})
			hdr, payload := make([]byte, 18), make([]byte, size-18)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := c.WriteMsg(uint16(i%8), backend.PPIDSegment, hdr, payload); err != nil {
					b.Fatal(err)
				}
			}
			<-all
		})
	}
	b.Run("RoundTrip64B", func(b *testing.B) {
		c, s := kernelPairB(b)
		defer c.Abort()
		defer s.Abort()
		echo := make(chan struct{}, 1)
		s.Start(func(sid uint16, ppid uint32, m []byte) { s.WriteMsg(sid, ppid, m) }, func(error) {})
		c.Start(func(uint16, uint32, []byte) { echo <- struct{}{} }, func(error) {})
		msg := make([]byte, 64)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := c.WriteMsg(0, backend.PPIDSegment, msg); err != nil {
				b.Fatal(err)
			}
			<-echo
		}
	})
}

func kernelPairB(b *testing.B) (c, s *kernelTransport) {
	b.Helper()
	ln, err := listen("127.0.0.1:0", Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch := make(chan backend.Transport, 1)
	go func() {
		tr, _ := ln.Accept(ctx)
		ch <- tr
	}()
	ct, err := dial(ctx, fmt.Sprintf("127.0.0.1:%d", ln.Addr().(*sctp.SCTPAddr).Port), Config{})
	if err != nil {
		b.Fatal(err)
	}
	st := <-ch
	if st == nil {
		b.Fatal("accept failed")
	}
	return ct.(*kernelTransport), st.(*kernelTransport)
}

// testKernelChunkWindow checks the RFC 5043 §10 window on a real kernel
// (with a window of 32 instead of 32765): while the peer does not read, its
// receive window closes, chunks stay unacknowledged and a writer of DDP
// segments stops after 32 of them on its stream; session control messages
// are not held back, other streams' segments wait for the drain; once the
// peer reads, the writers go on and nothing is lost.
func testKernelChunkWindow(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const window = 32
	c, s := kernelPair(t, Config{Streams: 4, ReceiveBuffer: 4096},
		Config{Streams: 4, maxOutstanding: window})
	defer c.Abort()
	defer s.Abort()

	// The SO_MEMINFO probe works on this kernel and starts idle.
	idle, err := c.idle()
	require.NoError(t, err)
	require.True(t, idle, "fresh association holds no DATA chunk")

	release := make(chan struct{})
	got := make(chan kmsg, 4096)
	s.Start(func(sid uint16, ppid uint32, b []byte) {
		<-release // stall the reader: the receive buffer and rwnd fill up
		got <- kmsg{sid, ppid, string(b)}
	}, func(error) {})
	c.Start(func(uint16, uint32, []byte) {}, func(error) {})

	payload := bytes.Repeat([]byte{0xA5}, 1000)
	const total = 80
	written := make(chan int, total)
	go func() {
		for i := range total {
			binary.BigEndian.PutUint32(payload, uint32(i))
			if err := c.WriteMsg(1, backend.PPIDSegment, payload); err != nil {
				return
			}
			written <- i
		}
	}()
	// The writer stalls well before the 400 messages are out.
	var n int
	for stalled := false; !stalled; {
		select {
		case <-written:
			n++
		case <-time.After(time.Second):
			stalled = true
		}
	}
	require.Less(t, n, total, "writer never held back")
	c.wmu.Lock()
	held := c.window.outstanding(1)
	idle, err = c.idle()
	c.wmu.Unlock()
	require.NoError(t, err)
	assert.Equal(t, window, held, "stream 1 stopped with the full window outstanding")
	assert.False(t, idle, "chunks unacknowledged while the peer stalls")

	// Control messages pass while stream 1 waits; stream 2's segment
	// waits for the drain.
	require.NoError(t, c.WriteMsg(1, backend.PPIDControl, []byte("ctl")))
	other := make(chan error, 1)
	go func() { other <- c.WriteMsg(2, backend.PPIDSegment, []byte("other stream")) }()
	select {
	case err := <-other:
		t.Fatalf("stream 2 not held while stream 1 drains: %v", err)
	case <-time.After(300 * time.Millisecond):
	}

	close(release)
	select {
	case err := <-other:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("stream 2 stuck")
	}
	for n < total {
		select {
		case <-written:
			n++
		case <-time.After(20 * time.Second):
			t.Fatalf("writer stuck after %d messages", n)
		}
	}
	seen := map[uint32]bool{}
	for len(seen) < total {
		select {
		case m := <-got:
			if m.sid == 1 && m.ppid == backend.PPIDSegment {
				i := binary.BigEndian.Uint32([]byte(m.data))
				assert.False(t, seen[i], "duplicate %d", i)
				seen[i] = true
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("received %d of %d segments", len(seen), total)
		}
	}
}

// linkMTU reads or (v > 0) sets the MTU of a network device.
func linkMTU(t *testing.T, dev string, v int) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(dev)
	require.NoError(t, err)
	if v > 0 {
		ifr.SetUint32(uint32(v))
		require.NoError(t, unix.IoctlIfreq(fd, unix.SIOCSIFMTU, ifr), "set %s MTU %d", dev, v)
	}
	require.NoError(t, unix.IoctlIfreq(fd, unix.SIOCGIFMTU, ifr))
	return int(ifr.Uint32())
}

// testKernelLinkMTU: the kernel's view of the path follows the link (RFC
// 5043 §9; issue 6's links of MTU 1280, 1500 and 9000 for kernel SCTP):
// an association's MaxMessage is the link MTU less IPv4 (20), SCTP common
// (12) and DATA chunk (16) headers, 4-aligned, the adaptation's MULPDU
// follows it, and an established association follows a drop of the link.
func testKernelLinkMTU(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	orig := linkMTU(t, "lo", 0)
	defer linkMTU(t, "lo", orig)
	for _, mtu := range []int{1280, 1500, 9000} {
		linkMTU(t, "lo", mtu)
		c, s := kernelPair(t, Config{}, Config{})
		want := (mtu - 20 - 12 - 16) &^ 3
		assert.Equal(t, want, c.MaxMessage(), "link MTU %d", mtu)
		assert.Equal(t, want, s.MaxMessage(), "link MTU %d", mtu)
		a := sctpllp.NewAssociation(c, sctpllp.Config{KeepIdle: true})
		assert.Equal(t, max(want-pmtu.DDPSSNLen-pmtu.BundlingReserve, iwarp.SCTPMinMULPDU), a.MULPDU(), "link MTU %d", mtu)
		_ = a.Abort()
		s.Abort()
	}

	// 9000 → 1280 while the association lives: the kernel's next send
	// sees the smaller route MTU and so does MaxMessage (re-read every
	// 100 ms).
	linkMTU(t, "lo", 9000)
	c, s := kernelPair(t, Config{}, Config{})
	defer c.Abort()
	defer s.Abort()
	ss := startSink(s)
	require.Equal(t, (9000-48)&^3, c.MaxMessage())
	linkMTU(t, "lo", 1280)
	start := time.Now()
	require.Eventually(t, func() bool {
		_ = c.WriteMsg(1, backend.PPIDSegment, []byte("probe"))
		return c.MaxMessage() == (1280-48)&^3
	}, 10*time.Second, 20*time.Millisecond, "MaxMessage after the link dropped to 1280")
	t.Logf("kernel SCTP: link 9000 → 1280 reflected in MaxMessage after %v", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, "probe", ss.next(t).data)
}
