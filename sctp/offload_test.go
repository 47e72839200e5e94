package sctp

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// requireOffload fails the test where the kernel lacks UDP_SEGMENT: the
// offload tests cannot run there, and must not pass without running.
func requireOffload(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Fatalf("UDP segmentation offload is Linux's (GOOS %s)", runtime.GOOS)
	}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer c.Close()
	require.True(t, udpOffloadSupported(c), "kernel without UDP_SEGMENT")
}

// At MTU 1500, the segments of a DDP message (WriteMsgMore, then
// WriteMsg) leave in runs of packets, one system call each, and arrive
// coalesced (UDP_GRO): every message intact, in fewer sends and reads
// than packets, with fewer SACKs than one per two packets. The receiver
// delivers nothing until everything is sent, so that the messages of
// coalesced reads are queued while the socket is read again into the
// same buffer: a message left pointing into it shows as corrupt. Runs of
// full packets and runs cut short by packets of varied sizes both.
func TestOffloadRunsAtMTU1500(t *testing.T) {
	for _, varied := range []bool{false, true} {
		t.Run(fmt.Sprintf("varied=%v", varied), func(t *testing.T) { testOffloadRuns(t, varied) })
	}
}

func testOffloadRuns(t *testing.T, varied bool) {
	requireOffload(t)
	cli, srv := connected(t, &Config{MTU: 1500, offloadLocal: true})
	gate, sr := make(chan struct{}), newRec()
	cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
	srv.Start(func(sid uint16, ppid uint32, b []byte) { <-gate; sr.fn(sid, ppid, b) }, func(error) {})
	const msgs = 880
	n := cli.MaxMessage()
	want := make([][]byte, msgs)
	for i := range want {
		size := n
		switch {
		case varied:
			size = n - i%7
		case i%44 == 43:
			size = n / 2 // a DDP message's last segment
		}
		want[i] = bytes.Repeat([]byte{byte(i)}, size)
		want[i][0], want[i][size-1] = byte(i>>8), 0xee
	}
	for i, m := range want {
		require.NoError(t, writeGrouped(cli, m, i, msgs))
	}
	require.Eventually(t, func() bool { return cli.Stats().Flight == 0 }, 10*time.Second, time.Millisecond,
		"everything acknowledged before the receiver delivers")
	close(gate)
	got := sr.wait(t, msgs)
	for i := range got {
		require.Equal(t, want[i], got[i].b, "message %d", i)
	}
	s, r := cli.Stats(), srv.Stats()
	t.Logf("sent %d packets in %d multi-packet sends; received %d in %d coalesced reads, %d SACKs",
		s.PacketsSent, s.OffloadSends, r.PacketsReceived, r.OffloadReceives, r.SACKsSent)
	assert.Positive(t, s.OffloadSends, "no packets sent in runs")
	assert.Positive(t, r.OffloadReceives, "no coalesced reads")
	assert.Less(t, r.SACKsSent, r.PacketsReceived/2)
	assert.Zero(t, s.SendErrors)
}

// With Config.NoOffload every packet is its own system call.
func TestNoOffload(t *testing.T) {
	cli, srv, _, sr := pair(t, &Config{MTU: 1500, NoOffload: true})
	m := make([]byte, cli.MaxMessage())
	for i := range 88 {
		require.NoError(t, writeGrouped(cli, m, i, 88))
	}
	sr.wait(t, 88)
	assert.Zero(t, cli.Stats().OffloadSends)
	assert.Zero(t, srv.Stats().OffloadReceives)
}

// A message held by WriteMsgMore goes out when a writer must wait for
// room: the writer waits for SACKs of what is held, which only its
// sending brings.
func TestWriteMsgMoreFlushesBeforeWaiting(t *testing.T) {
	cli, _, _, sr := pair(t, &Config{MTU: 1500, SendBuffer: 16 << 10, offloadLocal: true})
	m := make([]byte, cli.MaxMessage())
	done := make(chan error, 1)
	go func() {
		for range 200 {
			if err := cli.WriteMsgMore(1, 16, m); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("WriteMsgMore blocked on its own held messages")
	}
	// The last ones may wait for the next WriteMsg or transmission.
	require.NoError(t, cli.WriteMsg(1, 16, m))
	sr.wait(t, 201)
}

// The receiver announces a window that reopened while the peer may be
// held back by the one it knows of: after advertising a few KiB of a
// buffer that the user then drains, a SACK goes out at once; a window
// that was never small is not announced.
func TestWindowUpdate_RFC9260_6_2(t *testing.T) {
	const buf = 1 << 20
	cli, srv := connected(t, &Config{ReceiveBuffer: buf, MTU: 1500})
	srv.Start(func(uint16, uint32, []byte) {}, func(error) {})
	cli.Start(func(uint16, uint32, []byte) {}, func(error) {})

	update := func(advertised, consumed int) bool {
		srv.mu.Lock()
		srv.rxQueued += buf - advertised
		require.NoError(t, srv.rxAcct.Charge(buf-advertised), "what the queue holds is charged to the association's share")
		srv.advRwnd = uint32(advertised)
		before := srv.stats.sacksSent
		srv.mu.Unlock()
		srv.delivered(consumed)
		srv.mu.Lock()
		defer srv.mu.Unlock()
		sent := srv.stats.sacksSent > before
		srv.rxQueued -= buf - advertised - consumed // the rest consumed unannounced
		srv.rxAcct.Release(buf - advertised - consumed)
		srv.advRwnd = srv.rwnd()
		return sent
	}
	assert.True(t, update(4096, buf-4096), "4 KiB advertised, all consumed")
	srv.mu.Lock()
	open := int(srv.rwnd()) // the whole buffer, in the octets it holds
	srv.mu.Unlock()
	require.Eventually(t, func() bool { return cli.Stats().PeerRwnd == open }, 5*time.Second, time.Millisecond,
		"the peer learns of the open window")
	srv.mu.Lock()
	// Two packets charged as held, beyond the headroom rwnd keeps.
	twoPackets := int(srv.rxHeadroom()) + int(int64(2*1472)*srv.rxOfferCost()/rxCostUnit) + 1
	srv.mu.Unlock()
	assert.True(t, update(0, twoPackets), "closed window reopened by two packets")
	assert.False(t, update(buf-4096, 4096), "the window was never small")
	assert.False(t, update(4096, 1024), "opened by less than two packets")
}

// txBatch cuts the packets of a transmission into runs the kernel can
// segment: packets of one size but the last, at most gsoMaxSegments and
// gsoMaxBytes; a lone packet goes as it is, one too large to share a run
// goes uncopied; a refused run goes again packet by packet and offload
// stays off.
func TestTxBatchRuns(t *testing.T) {
	type send struct {
		run   bool // one system call for several packets
		sizes []int
	}
	var sends []send
	var gsoErr error
	b := &txBatch{
		out: func(p []byte) error { sends = append(sends, send{sizes: []int{len(p)}}); return nil },
		gso: func(pkts [][]byte, seg int) error {
			if gsoErr != nil {
				return gsoErr
			}
			s := send{run: true}
			for i, p := range pkts {
				if i < len(pkts)-1 && len(p) != seg {
					return fmt.Errorf("packet %d of a run: %d octets, not %d", i, len(p), seg)
				}
				s.sizes = append(s.sizes, len(p))
			}
			sends = append(sends, s)
			return nil
		},
	}
	pkts := func(sizes ...int) {
		for _, n := range sizes {
			require.NoError(t, b.add(make([]byte, n), false))
		}
		require.NoError(t, b.flush())
	}
	rep := func(n, k int) []int { return slicesRepeat(n, k) }

	pkts(100)
	assert.Equal(t, []send{{sizes: []int{100}}}, sends, "a lone packet")

	sends = nil
	pkts(1472, 1472, 1472, 900)
	assert.Equal(t, []send{{run: true, sizes: []int{1472, 1472, 1472, 900}}}, sends, "equal packets and a shorter last")

	sends = nil
	pkts(1472, 900, 1472, 1472)
	assert.Equal(t, []send{{run: true, sizes: []int{1472, 900}}, {run: true, sizes: []int{1472, 1472}}}, sends,
		"a shorter packet ends its run")

	sends = nil
	pkts(200, 1472, 1472)
	assert.Equal(t, []send{{sizes: []int{200}}, {run: true, sizes: []int{1472, 1472}}}, sends,
		"a larger packet starts a run")

	sends = nil
	pkts(rep(1000, gsoMaxSegments+1)...)
	assert.Equal(t, []send{{run: true, sizes: rep(1000, gsoMaxSegments)}, {sizes: []int{1000}}}, sends,
		"at most gsoMaxSegments packets")

	sends = nil
	pkts(rep(9000, 8)...)
	assert.Equal(t, []send{{run: true, sizes: rep(9000, 7)}, {sizes: []int{9000}}}, sends, "at most gsoMaxBytes")

	sends = nil
	pkts(60000, 60000)
	assert.Equal(t, []send{{sizes: []int{60000}}, {sizes: []int{60000}}}, sends, "too large to share a run")

	sends = nil
	gsoErr = syscall.EIO
	pkts(1472, 1472, 1472)
	assert.Equal(t, []send{{sizes: []int{1472}}, {sizes: []int{1472}}, {sizes: []int{1472}}}, sends,
		"a device that cannot segment: packet by packet")
	gsoErr = nil
	sends = nil
	pkts(1472, 1472)
	assert.Equal(t, []send{{sizes: []int{1472}}, {sizes: []int{1472}}}, sends, "offload stays off")
	assert.Nil(t, b.buf, "no buffer held between transmissions")
}

// A run's packets leave where they lie: a chunk in its own buffer
// (stable) is not copied, a packet of the association's shared packet
// buffer is, before the buffer is reused.
func TestTxBatchRunsUncopied(t *testing.T) {
	var runs [][][]byte
	b := &txBatch{
		out: func([]byte) error { return nil },
		gso: func(pkts [][]byte, _ int) error {
			runs = append(runs, append([][]byte(nil), pkts...))
			return nil
		},
	}
	stable := [][]byte{make([]byte, 1472), make([]byte, 1472)}
	shared := make([]byte, 1472)
	shared[0] = 1
	require.NoError(t, b.add(stable[0], true))
	require.NoError(t, b.add(shared, false))
	shared[0] = 2
	require.NoError(t, b.add(stable[1], true))
	require.NoError(t, b.flush())
	require.Len(t, runs, 1)
	require.Len(t, runs[0], 3)
	assert.Same(t, &stable[0][0], &runs[0][0][0], "a stable packet is not copied")
	assert.Same(t, &stable[1][0], &runs[0][2][0])
	assert.Equal(t, byte(1), runs[0][1][0], "a shared one is, as it was")
	assert.Nil(t, b.buf, "no buffer held between transmissions")
}

func slicesRepeat(n, k int) []int {
	s := make([]int, k)
	for i := range s {
		s[i] = n
	}
	return s
}

// Runs of packets are not sent to this host's own addresses (the kernel
// cuts them up on delivery, and Linux 6.1 crashed doing so for its
// SCTP-over-UDP socket): an association over loopback at MTU 1500 sends
// packet by packet unless a test asks otherwise.
func TestNoRunsToLocalDestinations(t *testing.T) {
	requireOffload(t)
	assert.True(t, localDestination(netip.MustParseAddr("127.0.0.1")))
	assert.True(t, localDestination(netip.MustParseAddr("::1")))
	assert.True(t, localDestination(netip.MustParseAddr("::ffff:127.0.0.2")))
	ifas, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, ia := range ifas {
		if n, ok := ia.(*net.IPNet); ok {
			a, _ := netip.AddrFromSlice(n.IP)
			assert.True(t, localDestination(a), "%v", a)
		}
	}
	assert.False(t, localDestination(netip.MustParseAddr("192.0.2.1")), "TEST-NET-1 is nobody's here")

	cli, _, _, sr := pair(t, &Config{MTU: 1500})
	m := make([]byte, cli.MaxMessage())
	for i := range 88 {
		require.NoError(t, writeGrouped(cli, m, i, 88))
	}
	sr.wait(t, 88)
	cli.mu.Lock()
	defer cli.mu.Unlock()
	require.NotNil(t, cli.io.batch)
	assert.Nil(t, cli.io.batch.gso, "runs to a local destination")
	assert.NotNil(t, cli.io.batch.mm, "several packets per sendmmsg instead")
}

// To a local destination a transmission's packets leave by sendmmsg, up
// to mmsgMax per call, whatever their sizes; packets in the association's
// shared packet buffer are copied, chunks in their own buffers are not.
func TestTxBatchMMsg(t *testing.T) {
	var calls [][][]byte
	var singles [][]byte
	b := &txBatch{
		out: func(p []byte) error { singles = append(singles, p); return nil },
		mm: func(pkts [][]byte) error {
			c := make([][]byte, len(pkts))
			copy(c, pkts)
			calls = append(calls, c)
			return nil
		},
	}
	stable := make([]byte, 65000)
	shared := make([]byte, 60)
	shared[0] = 1
	require.NoError(t, b.add(stable, true))
	require.NoError(t, b.add(shared, false))
	shared[0] = 2 // the association reuses its packet buffer at once
	require.NoError(t, b.flush())
	require.Len(t, calls, 1)
	require.Len(t, calls[0], 2)
	assert.Same(t, &stable[0], &calls[0][0][0], "a stable packet is not copied")
	assert.Equal(t, byte(1), calls[0][1][0], "a shared one is")
	assert.Nil(t, b.buf, "no buffer held between transmissions")

	calls = nil
	for range mmsgMax + 3 {
		require.NoError(t, b.add(make([]byte, 100), false))
	}
	require.NoError(t, b.flush())
	require.Len(t, calls, 2)
	assert.Len(t, calls[0], mmsgMax)
	assert.Len(t, calls[1], 3)

	calls = nil
	require.NoError(t, b.add(make([]byte, 100), false))
	require.NoError(t, b.flush())
	assert.Empty(t, calls, "a lone packet goes by itself")
	assert.Len(t, singles, 1)
}

// An accepted association sends by sendmmsg too, on the listener's
// unconnected socket, addressed to its peer: 64 KiB messages in two
// packets each reach the dialer intact.
func TestMMsgFromListener(t *testing.T) {
	_, srv, cr, _ := pair(t, nil)
	k := srv.MaxMessage()
	msg := make([]byte, 64<<10)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	for range 50 {
		require.NoError(t, srv.WriteMsgMore(1, 16, msg[:k]))
		require.NoError(t, srv.WriteMsg(1, 16, msg[k:]))
	}
	got := cr.wait(t, 100)
	for i, m := range got {
		if i%2 == 0 {
			require.Equal(t, msg[:k], m.b, "message %d", i)
		} else {
			require.Equal(t, msg[k:], m.b, "message %d", i)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.NotNil(t, srv.io.batch)
	assert.NotNil(t, srv.io.batch.mm)
	assert.Positive(t, srv.io.batch.offloaded, "two packets per sendmmsg")
}

// Flush sends what WriteMsgMore holds, bundled (RFC 9260 §6.10): three
// small messages held, then one packet with three DATA chunks. With
// nothing held it sends nothing; on an ended association it fails.
func TestFlushSendsHeld(t *testing.T) {
	cli, _, _, sr := pair(t, &Config{offloadLocal: true})
	require.NoError(t, cli.Flush())
	for i := range 3 {
		require.NoError(t, cli.WriteMsgMore(1, 16, []byte{byte(i), 'r', 'e', 'q'}))
	}
	before := cli.Stats()
	time.Sleep(50 * time.Millisecond)
	sr.mu.Lock()
	assert.Empty(t, sr.msgs, "held until Flush")
	sr.mu.Unlock()
	require.NoError(t, cli.Flush())
	got := sr.wait(t, 3)
	for i := range 3 {
		assert.Equal(t, []byte{byte(i), 'r', 'e', 'q'}, got[i].b)
	}
	after := cli.Stats()
	assert.Equal(t, before.DataChunksSent+3, after.DataChunksSent)
	assert.Equal(t, before.PacketsSent+1, after.PacketsSent, "one packet for the three")
	require.NoError(t, cli.Abort())
	require.ErrorIs(t, cli.Flush(), ErrClosed)
}

// The rest of a message whose head WriteMsgMore holds goes at once, even
// with the send buffer full (or writers waiting): queued, it would send the
// held head alone and wait behind every other writer for a few octets (a
// DDP Message's last segment after its full ones). It may take at most
// corkTail beyond the send buffer; once the held head has gone with it,
// nothing more goes beyond. The peer's SACKs are lost meanwhile, so that
// no space is freed; the peer gets every message.
func TestWriteMsgCompletesCork(t *testing.T) {
	const sendBuf = 64 << 10
	cli, srv, _, sr := pair(t, &Config{MTU: 1500, SendBuffer: sendBuf, offloadLocal: true})
	require.NotNil(t, cli.io.batch, "no batch: WriteMsgMore holds nothing")
	srv.mu.Lock()
	out := srv.io.out
	srv.io.out = func([]byte) error { return nil }
	srv.mu.Unlock()
	restore := func() { // the SACKs flow again, from a SACK of everything now
		srv.mu.Lock()
		defer srv.mu.Unlock()
		srv.io.out = out
		srv.ctrl = srv.appendSACK(srv.ctrl)
		srv.transmit(time.Now())
	}
	t.Cleanup(restore) // before the association ends
	room := func() int {
		cli.mu.Lock()
		defer cli.mu.Unlock()
		return sendBuf - cli.sndBuffered
	}
	// Fill the send buffer to just below one 2,048-octet class.
	sent := 0
	for room() >= 2*bufClass(1000) {
		require.NoError(t, cli.WriteMsg(1, 16, make([]byte, 1000)))
		sent++
	}
	for room() >= bufClass(1000) {
		require.NoError(t, cli.WriteMsg(1, 16, make([]byte, 100)))
		sent++
	}
	require.GreaterOrEqual(t, room(), bufClass(100))
	// The head of a message fits and is held; its tail does not fit.
	require.NoError(t, cli.WriteMsgMore(3, 16, make([]byte, 100)))
	require.Less(t, room(), bufClass(1000), "the tail does not fit")
	tail := make(chan error, 1)
	go func() { tail <- cli.WriteMsg(3, 16, make([]byte, 1000)) }()
	select {
	case err := <-tail:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the rest of a held message waited for space")
	}
	assert.Negative(t, room(), "the tail went beyond the send buffer")
	assert.GreaterOrEqual(t, room(), -corkTail, "by at most corkTail")
	// Nothing is held now: a message that does not fit waits its turn.
	cli.mu.Lock()
	assert.Zero(t, cli.corked)
	assert.False(t, cli.completesCork(bufClass(100)))
	cli.mu.Unlock()
	restore()
	got := sr.wait(t, sent+2)
	assert.Equal(t, uint16(3), got[len(got)-2].sid)
	assert.Equal(t, uint16(3), got[len(got)-1].sid)
}

// reserveGranted reserves send-buffer space for n writers of one message
// of the given octets each, as grantWriters does when a SACK frees it,
// and returns each writer's chunks, marshalled as writeMsg does between
// its grant and queue.
func reserveGranted(t *testing.T, a *Association, n int, msg []byte) [][]txChunk {
	t.Helper()
	out := make([][]txChunk, n)
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range out {
		out[i] = appendChunks(nil, uint16(i), 16, [][]byte{msg}, newFragCut(len(msg), a.MaxMessage()), true)
		for _, c := range out[i] {
			a.sndBuffered += cap(*c.buf)
		}
		a.copying++
	}
	return out
}

func chunksSize(cs []txChunk) (n int) {
	for _, c := range cs {
		n += cap(*c.buf)
	}
	return n
}

// Writers granted space by one SACK queue their messages without
// transmitting while others granted with them are still copying; the last
// transmits them all, one run of packets in one system call, rather than
// each sending its own under mu, one after the other.
func TestGrantedWritersTransmitOnce(t *testing.T) {
	requireOffload(t)
	cli, _, _, sr := pair(t, &Config{MTU: 1500, offloadLocal: true})
	const writers = 4
	msg := bytes.Repeat([]byte{'g'}, 1000)
	granted := reserveGranted(t, cli, writers, msg)
	before := cli.Stats()
	for i, cs := range granted[:writers-1] {
		require.NoError(t, cli.queue(uint16(i), cs, chunksSize(cs), false, true))
	}
	mid := cli.Stats()
	assert.Equal(t, before.PacketsSent, mid.PacketsSent, "nothing sent while a granted writer copies")
	require.NoError(t, cli.queue(writers-1, granted[writers-1], chunksSize(granted[writers-1]), false, true))
	after := cli.Stats()
	assert.Equal(t, before.OffloadSends+1, after.OffloadSends, "one system call")
	assert.GreaterOrEqual(t, after.PacketsSent-before.PacketsSent, uint64(2))
	got := sr.wait(t, writers)
	for _, m := range got {
		assert.Equal(t, msg, m.b)
	}
	cli.mu.Lock()
	defer cli.mu.Unlock()
	assert.Zero(t, cli.copying)
	assert.False(t, cli.deferred)
}

// A message left to a granted writer to transmit is not held when that
// writer's own message is a WriteMsgMore: it goes at once, without
// waiting for the rest of the granted writer's message.
func TestDeferredMessageNotCorked(t *testing.T) {
	cli, _, _, sr := pair(t, &Config{MTU: 1500, offloadLocal: true})
	require.NotNil(t, cli.io.batch, "no batch: WriteMsgMore holds nothing")
	granted := reserveGranted(t, cli, 1, make([]byte, 500))
	require.NoError(t, cli.WriteMsg(7, 16, []byte("left to the granted writer")))
	cli.mu.Lock()
	assert.True(t, cli.deferred, "the granted writer transmits it")
	cli.mu.Unlock()
	start := time.Now()
	require.NoError(t, cli.queue(0, granted[0], chunksSize(granted[0]), true, true))
	got := sr.wait(t, 2)
	assert.Less(t, time.Since(start), 500*time.Millisecond, "held until a timer sent it (1 s)")
	assert.ElementsMatch(t, []uint16{0, 7}, []uint16{got[0].sid, got[1].sid})
}

// Two coalesced reads that were queued together are acknowledged by one
// SACK (RFC 9260 §6.2: these arrived together, as one read's packets do):
// the first read's transmission waits for the second, with the delayed-ack
// timer armed meanwhile, and the SACK after the second covers all four
// packets.
func TestRFC9260_6_2_TwoQueuedReadsOneSACK(t *testing.T) {
	peer := newRawPeer(t)
	a, tag := establishRaw(t, peer, &Config{Streams: 4})
	a.Start(func(uint16, uint32, []byte) {}, func(error) {})
	const seg = 200
	read := func(tsns ...uint32) []byte {
		var b []byte
		for _, tsn := range tsns {
			p := wire.AppendHeader(nil, wire.Header{SrcPort: peer.port, DstPort: defaultPort, VerificationTag: tag})
			d := wire.Data{TSN: tsn, StreamID: 1, PPID: 16, Unordered: true, Beginning: true, Ending: true,
				UserData: make([]byte, seg-len(p)-wire.DataHeaderLen)}
			p = d.Append(p)
			wire.SetChecksum(p)
			require.Len(t, p, seg)
			b = append(b, p...)
		}
		return b
	}
	before := a.Stats().SACKsSent
	a.receiveSegments(read(100, 101), nil, seg, false)
	a.mu.Lock()
	armed := a.io.timers.Running(timerDelayedAck)
	a.mu.Unlock()
	assert.Equal(t, before, a.Stats().SACKsSent, "the first read's SACK waits")
	assert.True(t, armed, "with the delayed-ack timer armed")
	a.receiveSegments(read(102, 103), nil, seg, true)
	assert.Equal(t, before+1, a.Stats().SACKsSent, "one SACK for both reads")
	_, c := peer.recv(wire.ChunkSACK)
	s, err := wire.ParseSACK(c, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, uint32(103), s.CumTSNAck)
}

// coalescedRead returns a read buffer of n packets of seg octets to a,
// one unfragmented DATA chunk each from TSN *tsn on (advanced), their
// user data the low octet of their TSN.
func coalescedRead(peer *rawPeer, tag uint32, tsn *uint32, n, seg int) *[]byte {
	bp := getBuf(largeBuf)
	b := (*bp)[:0]
	for range n {
		p := wire.AppendHeader(nil, wire.Header{SrcPort: peer.port, DstPort: defaultPort, VerificationTag: tag})
		d := wire.Data{TSN: *tsn, StreamID: 1, PPID: 16, Unordered: true, Beginning: true, Ending: true,
			UserData: bytes.Repeat([]byte{byte(*tsn)}, seg-len(p)-wire.DataHeaderLen)}
		*tsn++
		p = d.Append(p)
		wire.SetChecksum(p)
		b = append(b, p...)
	}
	*bp = b
	return bp
}

// A coalesced read that fills at least three quarters of its buffer is
// delivered from that buffer, its small messages uncopied, the buffer
// charged once to the receive window and given back once every message is
// delivered; a sparse read's messages are copied out, each charged its
// size class (RFC 9260 §6.2: the window offers what the buffers actually
// hold).
func TestRFC9260_6_2_DenseReadDeliveredInPlace(t *testing.T) {
	peer := newRawPeer(t)
	a, tag := establishRaw(t, peer, &Config{Streams: 4})
	type got struct{ data []byte }
	recv := make(chan got, 128)
	a.Start(func(_ uint16, _ uint32, b []byte) { recv <- got{b} }, func(error) {})
	const seg = 1400
	tsn := uint32(100)
	read := func(n int) *[]byte { return coalescedRead(peer, tag, &tsn, n, seg) }

	dense := read(45) // 63,000 of 65,536+ octets
	base := &(*dense)[0]
	require.True(t, a.receiveSegments(*dense, dense, seg, true), "the association keeps a dense read's buffer")
	for i := range 45 {
		m := <-recv
		require.Len(t, m.data, seg-wire.HeaderLen-wire.DataHeaderLen)
		assert.Equal(t, byte(100+i), m.data[0])
		off := uintptr(unsafe.Pointer(&m.data[0])) - uintptr(unsafe.Pointer(base))
		assert.Less(t, off, uintptr(cap(*dense)), "message %d is delivered from the read's buffer", i)
	}
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.rxQueued == 0
	}, 10*time.Second, time.Millisecond, "the buffer's charge is released once its messages are delivered")

	sparse := read(30) // 42,000: under three quarters
	sbase := &(*sparse)[0]
	assert.False(t, a.receiveSegments(*sparse, sparse, seg, true), "a sparse read's buffer stays the caller's")
	for range 30 {
		m := <-recv
		off := uintptr(unsafe.Pointer(&m.data[0])) - uintptr(unsafe.Pointer(sbase))
		assert.GreaterOrEqual(t, off, uintptr(cap(*sparse)), "a sparse read's messages are copied out")
	}
	putBuf(sparse)
}

// The window a receiver of dense coalesced reads offers is its share in
// the octets those reads hold (RFC 9260 §6.2): a 64 KiB buffer of 45
// packets is charged once for all 45 chunks, about 1.07 times their
// octets. rxCost was folded one chunk at a time, and only the first chunk
// of a read carried the buffer's charge: it came out at 48 times the
// octets and a_rwnd at a 48th of the share, which kept a fast sender
// below a third of its rate on an Ethernet MTU.
func TestRFC9260_6_2_DenseReadsOfferTheShare(t *testing.T) {
	peer := newRawPeer(t)
	const buf = 4 << 20
	a, tag := establishRaw(t, peer, &Config{Streams: 4, ReceiveBuffer: buf})
	delivered := make(chan struct{}, 64*45)
	a.Start(func(uint16, uint32, []byte) { delivered <- struct{}{} }, func(error) {})
	const seg = 1400
	tsn := uint32(100)
	for r := range 32 {
		bp := coalescedRead(peer, tag, &tsn, 45, seg)
		require.True(t, a.receiveSegments(*bp, bp, seg, true), "read %d is dense", r)
		for range 45 {
			<-delivered
		}
		require.Eventually(t, func() bool { return rxHeld(a) == 0 }, 10*time.Second, time.Millisecond)
	}
	var s wire.SACK
	for {
		_, c := peer.recv(wire.ChunkSACK)
		var err error
		s, err = wire.ParseSACK(c, nil, nil)
		require.NoError(t, err)
		if s.CumTSNAck == tsn-1 {
			break
		}
	}
	assert.Greater(t, int(s.ARwnd), (buf-buf/16)*9/10, "a_rwnd offers the share, less rwnd's headroom, in the octets dense reads hold")
	assert.Less(t, int(s.ARwnd), buf, "and not more than the share")
	a.mu.Lock()
	cost := float64(a.rxOfferCost()) / rxCostUnit
	a.mu.Unlock()
	assert.InDelta(t, float64(largeBuf)/(45*(seg-wire.HeaderLen-wire.DataHeaderLen)), cost, 0.03,
		"a received octet is charged what its read's buffer holds per octet")
}

// WriteMsgMore holds what one UDP_SEGMENT send takes, counted in packet
// octets: 44 full packets at MTU 1500, sent when the 45th comes, which
// starts the next run. (Counted in buffer octets, 2,048 per packet, it sent
// a run of 32 and the rest of a 64 KiB DDP message as a second run.)
func TestWriteMsgMoreHoldsAFullRun(t *testing.T) {
	requireOffload(t)
	cli, srv, _, sr := pair(t, &Config{MTU: 1500, offloadLocal: true})
	require.NotNil(t, cli.io.batch)
	// No SACK comes meanwhile: anything that transmits sends what is held.
	srv.mu.Lock()
	out := srv.io.out
	srv.io.out = func([]byte) error { return nil }
	srv.mu.Unlock()
	restore := func() {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		srv.io.out = out
		srv.ctrl = srv.appendSACK(srv.ctrl)
		srv.transmit(time.Now())
	}
	t.Cleanup(restore)
	m := make([]byte, cli.MaxMessage())
	pkt := wire.HeaderLen + wire.DataHeaderLen + len(m)
	perRun := gsoMaxBytes / pkt
	before := cli.Stats().PacketsSent
	corked := func() int {
		cli.mu.Lock()
		defer cli.mu.Unlock()
		return cli.corked
	}
	for i := range perRun {
		require.NoError(t, cli.WriteMsgMore(1, 16, m))
		require.Equal(t, before, cli.Stats().PacketsSent, "message %d of a run sent before the run was full", i+1)
	}
	assert.Equal(t, perRun*pkt, corked())
	require.NoError(t, cli.WriteMsgMore(1, 16, m))
	assert.Greater(t, cli.Stats().PacketsSent, before, "a full run held")
	assert.Equal(t, pkt, corked(), "the message beyond the run starts the next")
	restore()
	require.NoError(t, cli.Flush())
	sr.wait(t, perRun+1)
}
