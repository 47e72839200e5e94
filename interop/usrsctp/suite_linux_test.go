package usrsctp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/sctp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Generous bounds: two cores shared by many test binaries.
const (
	waitEvent = 30 * time.Second
	waitBulk  = 90 * time.Second
)

// usrsctp's SCTP port (its listener's, and the one the native side dials).
const usrsctpSCTPPort = 5000

// sac_state values of SCTP_ASSOC_CHANGE (usrsctp.h).
const (
	commUp       = "1"
	commLost     = "2"
	shutdownComp = "4"
)

// strreset_flags of SCTP_STREAM_RESET_EVENT (usrsctp.h).
const (
	resetIncomingSSN = 0x1
	resetOutgoingSSN = 0x2
	resetDenied      = 0x4
	resetFailed      = 0x8
)

// msgSum is one received message: its length and FNV-1a 64.
type msgSum struct {
	size int
	sum  uint64
}

type streamKey struct {
	sid  uint16
	ppid uint32
}

// nativeAssoc is an sctp-native association with what it received.
type nativeAssoc struct {
	a    *sctp.Association
	idx  int // the peer's index of the same association
	mu   sync.Mutex
	rx   map[streamKey][]msgSum
	done chan error // the association's end (Start's done), once
}

func (n *nativeAssoc) received(k streamKey) []msgSum {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.rx[k])
}

// waitReceived waits until count messages arrived on k; it fails early
// if the association ends first.
func (n *nativeAssoc) waitReceived(t *testing.T, k streamKey, count int, timeout time.Duration) []msgSum {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if got := n.received(k); len(got) >= count {
			return got
		}
		select {
		case err := <-n.done:
			n.done <- err
			t.Fatalf("association ended with %d of %d messages on stream %d PPID %d: %v",
				len(n.received(k)), count, k.sid, k.ppid, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages on stream %d PPID %d after %v", len(n.received(k)), count, k.sid, k.ppid, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ended waits for the association's end and returns its error.
func (n *nativeAssoc) ended(t *testing.T) error {
	t.Helper()
	select {
	case err := <-n.done:
		n.done <- err
		return err
	case <-time.After(waitEvent):
		t.Fatalf("association still %v after %v", n.a.Stats().State, waitEvent)
		return nil
	}
}

// alive reports whether the association has not ended.
func (n *nativeAssoc) alive() (bool, error) {
	select {
	case err := <-n.done:
		n.done <- err
		return false, err
	default:
		return true, nil
	}
}

// chunkTap counts the chunks sctp-native sends and receives (Config.Tap).
type chunkTap struct {
	sent, recv [256]atomic.Int64
}

func (c *chunkTap) tap(sent bool, _, _ netip.AddrPort, pkt []byte) {
	ctr := &c.recv
	if sent {
		ctr = &c.sent
	}
	// RFC 9260 §3: a 12-octet common header, then chunks of Type, Flags,
	// Length, padded to 4 octets.
	for off := 12; off+4 <= len(pkt); {
		ctr[pkt[off]].Add(1)
		l := int(binary.BigEndian.Uint16(pkt[off+2:]))
		if l < 4 {
			return
		}
		off += (l + 3) &^ 3
	}
}

// env is one direction of the suite: a peer process, a capture of its
// UDP port, and how to set up one association.
type env struct {
	p             *peer
	capt          *capture
	usrsctpClient bool
	ln, ln1500    *sctp.Listener // usrsctp dials these (usrsctpClient)
	cfg, cfg1500  sctp.Config
	tap           *chunkTap
	conns         int
	nextPort      uint16 // the native dialer's SCTP port: one per association
}

// nativeConfig is sctp-native's configuration toward usrsctp: a peer
// without the DDP adaptation indication (RFC 5043 §5.1) is accepted, and
// HEARTBEATs go every 200 ms on an idle path (RFC 9260 §8.3).
func nativeConfig(tap *chunkTap, mtu int) sctp.Config {
	return sctp.Config{AllowMissingAdaptation: true, HeartbeatInterval: 200 * time.Millisecond,
		MTU: mtu, PeerPort: usrsctpSCTPPort, Tap: tap.tap}
}

func newEnv(t *testing.T, usrsctpClient bool) *env {
	e := &env{usrsctpClient: usrsctpClient, tap: &chunkTap{}, nextPort: 5001}
	e.cfg, e.cfg1500 = nativeConfig(e.tap, 0), nativeConfig(e.tap, 1500)
	if usrsctpClient {
		var err error
		e.ln, err = sctp.Listen("udp4", "127.0.0.1:0", &e.cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.ln.Close() })
		e.ln1500, err = sctp.Listen("udp4", "127.0.0.1:0", &e.cfg1500)
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.ln1500.Close() })
		e.p = startPeer(t, "client", 0)
		e.capt = startCapture(t, fmt.Sprintf("udp port %d", e.p.port))
	} else {
		e.p = startPeer(t, "server", usrsctpSCTPPort)
		e.capt = startCapture(t, fmt.Sprintf("udp port %d", e.p.port))
	}
	return e
}

// connect sets up one association (RFC 9260 §5.1) and waits until both
// ends report it established. mtu 1500 fragments every message above
// about 1.4 KiB on sctp-native's side.
func (e *env) connect(t *testing.T, mtu int) *nativeAssoc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitEvent)
	defer cancel()
	idx := e.conns
	e.conns++
	var a *sctp.Association
	if e.usrsctpClient {
		ln := e.ln
		if mtu == 1500 {
			ln = e.ln1500
		}
		type res struct {
			a   *sctp.Association
			err error
		}
		acc := make(chan res, 1)
		go func() { a, err := ln.Accept(ctx); acc <- res{a, err} }()
		port := ln.Addr().(*net.UDPAddr).Port
		e.p.send(t, "connect %d %d", port, 5000) // package sctp's default SCTP port
		l := e.p.waitN(t, waitEvent, idx+1, "connected")[idx]
		require.Equal(t, strconv.Itoa(idx), l[1])
		r := <-acc
		require.NoError(t, r.err)
		a = r.a
	} else {
		cfg := e.cfg
		if mtu == 1500 {
			cfg = e.cfg1500
		}
		// usrsctp finds an association by its addresses and SCTP ports:
		// each association of ours gets an SCTP port of its own.
		cfg.LocalPort = e.nextPort
		e.nextPort++
		var err error
		a, err = sctp.Dial(ctx, "udp4", fmt.Sprintf("127.0.0.1:%d", e.p.port), &cfg)
		require.NoError(t, err)
		l := e.p.waitN(t, waitEvent, idx+1, "accepted")[idx]
		require.Equal(t, strconv.Itoa(idx), l[1])
	}
	e.p.wait(t, waitEvent, "assoc", strconv.Itoa(idx), commUp)
	n := &nativeAssoc{a: a, idx: idx, rx: map[streamKey][]msgSum{}, done: make(chan error, 1)}
	a.Start(func(sid uint16, ppid uint32, b []byte) {
		n.mu.Lock()
		k := streamKey{sid, ppid}
		n.rx[k] = append(n.rx[k], msgSum{len(b), sum(b)})
		n.mu.Unlock()
	}, func(err error) { n.done <- err })
	t.Cleanup(func() {
		_ = a.Abort()
		<-a.Done()
	})
	return n
}

// batch is count messages of size octets of gen(seed, k) on one stream.
type batch struct {
	sid       uint16
	unordered bool
	ppid      uint32
	size      int
	count     int
	seed      uint64
}

func (b batch) key() streamKey { return streamKey{b.sid, b.ppid} }

// want returns the messages of b, in order.
func (b batch) want() []msgSum {
	buf := make([]byte, b.size)
	out := make([]msgSum, b.count)
	for k := range out {
		gen(buf, b.seed, uint64(k))
		out[k] = msgSum{b.size, sum(buf)}
	}
	return out
}

// peerSend has the peer send b on association idx.
func (e *env) peerSend(t *testing.T, idx int, b batch) {
	u := 0
	if b.unordered {
		u = 1
	}
	e.p.send(t, "send %d %d %d %d %d %d %d", idx, b.sid, u, b.ppid, b.size, b.count, b.seed)
}

// nativeSend sends b from sctp-native (every message unordered: RFC 5043
// §10, the stack's only kind).
func nativeSend(a *sctp.Association, b batch) error {
	buf := make([]byte, b.size)
	for k := 0; k < b.count; k++ {
		gen(buf, b.seed, uint64(k))
		if err := a.WriteMsg(b.sid, b.ppid, buf); err != nil {
			return fmt.Errorf("stream %d message %d: %w", b.sid, k, err)
		}
	}
	return nil
}

// requireNativeGot checks that sctp-native received b byte for byte: in
// order for an ordered batch (RFC 9260 §6.5), as a set for an unordered
// one (§6.6).
func requireNativeGot(t *testing.T, n *nativeAssoc, b batch) {
	t.Helper()
	got := n.waitReceived(t, b.key(), b.count, waitBulk)
	want := b.want()
	if !b.unordered {
		require.Equal(t, want, got, "stream %d: ordered messages out of order or altered", b.sid)
		return
	}
	require.ElementsMatch(t, want, got, "stream %d: unordered messages altered", b.sid)
}

// peerRecv returns what the peer received on association idx, stream sid,
// PPID ppid, once count messages are there, and their U flags.
func (e *env) peerRecv(t *testing.T, idx int, b batch) ([]msgSum, []string) {
	t.Helper()
	pre := []string{"recv", strconv.Itoa(idx), strconv.Itoa(int(b.sid))}
	deadline := time.Now().Add(waitBulk)
	for {
		var got []msgSum
		var flags []string
		for _, l := range e.p.find(pre...) {
			// recv I SID U PPID SSN SIZE FNV
			if l[4] != strconv.Itoa(int(b.ppid)) {
				continue
			}
			size, err := strconv.Atoi(l[6])
			require.NoError(t, err)
			s, err := strconv.ParseUint(l[7], 10, 64)
			require.NoError(t, err)
			got = append(got, msgSum{size, s})
			flags = append(flags, l[3])
		}
		if len(got) >= b.count {
			return got, flags
		}
		if time.Now().After(deadline) {
			t.Fatalf("usrsctp received %d of %d messages on stream %d; its output:\n%s", len(got), b.count, b.sid, e.p.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requirePeerGot checks that usrsctp received b byte for byte, each
// message with the U bit.
func (e *env) requirePeerGot(t *testing.T, idx int, b batch) {
	t.Helper()
	got, flags := e.peerRecv(t, idx, b)
	require.ElementsMatch(t, b.want(), got, "stream %d: messages altered", b.sid)
	for _, u := range flags {
		require.Equal(t, "1", u, "stream %d: sctp-native's message arrived ordered", b.sid)
	}
}

// bulkBatches are 1, 8 and 64 KiB messages, ordered and unordered, one
// stream each, from sid on.
func bulkBatches(sid uint16, ppid uint32, orderedToo bool) []batch {
	var out []batch
	sizes, counts := []int{1 << 10, 8 << 10, 64 << 10}, []int{64, 32, 16}
	for i, size := range sizes {
		for _, u := range []bool{false, true} {
			if !u && !orderedToo {
				u = true // a second unordered stream of this size
			}
			out = append(out, batch{sid: sid, unordered: u, ppid: ppid, size: size, count: counts[i], seed: uint64(sid)*7919 + uint64(ppid)})
			sid++
			ppid++
		}
	}
	return out
}

// bulk moves bulkBatches both ways at once over n and checks every
// message. It logs the datagrams the kernel dropped at usrsctp's UDP
// socket (its default receive buffer) and sctp-native's retransmissions.
func (e *env) bulk(t *testing.T, n *nativeAssoc) {
	nativePort := n.a.LocalAddr().(*net.UDPAddr).Port
	dropsBefore, nativeDropsBefore := udpDrops(t, e.p.port), udpDrops(t, nativePort)
	statsBefore := n.a.Stats()
	fromPeer := bulkBatches(0, 100, true)
	fromNative := bulkBatches(6, 200, false)
	for _, b := range fromPeer {
		e.peerSend(t, n.idx, b)
	}
	sendErr := make(chan error, 1)
	go func() {
		for _, b := range fromNative {
			if err := nativeSend(n.a, b); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- nil
	}()
	require.NoError(t, <-sendErr)
	for _, b := range fromPeer {
		requireNativeGot(t, n, b)
	}
	e.p.waitN(t, waitBulk, len(fromPeer), "sendok", strconv.Itoa(n.idx))
	require.Empty(t, e.p.find("senderr", strconv.Itoa(n.idx)))
	// The peer's own record of what it sent agrees with gen (the two
	// generators are the same).
	sent := e.p.find("sent", strconv.Itoa(n.idx))
	var ordered0 []msgSum
	for _, l := range sent {
		if l[2] == "0" && l[3] == "100" {
			size, _ := strconv.Atoi(l[4])
			s, _ := strconv.ParseUint(l[5], 10, 64)
			ordered0 = append(ordered0, msgSum{size, s})
		}
	}
	require.Equal(t, fromPeer[0].want(), ordered0, "peer.c's generator differs from gen")
	for _, b := range fromNative {
		e.requirePeerGot(t, n.idx, b)
	}
	st := n.a.Stats()
	t.Logf("datagrams dropped by the kernel: %d at usrsctp's UDP socket (port %d, default receive buffer), %d at sctp-native's (port %d); "+
		"sctp-native: %d packets sent, %d DATA chunks retransmitted, %d T3-rtx expiries, %d fast retransmits, max packet %d",
		udpDrops(t, e.p.port)-dropsBefore, e.p.port, udpDrops(t, nativePort)-nativeDropsBefore, nativePort, st.PacketsSent-statsBefore.PacketsSent,
		st.Retransmits-statsBefore.Retransmits, st.T3Expiries-statsBefore.T3Expiries,
		st.FastRetransmits-statsBefore.FastRetransmits, st.MaxPacket)
}

func TestUsrsctpClientToNativeServer(t *testing.T) { runSuite(t, true) }

func TestNativeClientToUsrsctpServer(t *testing.T) { runSuite(t, false) }

// runSuite runs every case over one peer process and one capture, each
// case on associations of its own, then checks the capture.
func runSuite(t *testing.T, usrsctpClient bool) {
	e := newEnv(t, usrsctpClient)
	p := e.p

	// RFC 9260 §5.1, then bulk both ways (§6.5, §6.6, §6.9), HEARTBEAT
	// both ways (§8.3), SHUTDOWN by usrsctp (§9.2).
	t.Run("RFC9260_5_1_Handshake_6_9_Bulk_8_3_Heartbeat_9_2_ShutdownByUsrsctp", func(t *testing.T) {
		n := e.connect(t, 0)
		e.bulk(t, n)

		hbRecv, hbAckSent := e.tap.recv[chunkHeartbeat].Load(), e.tap.sent[chunkHeartbeatAck].Load()
		p.send(t, "hb %d", n.idx)
		require.Equal(t, "0", p.wait(t, waitEvent, "hbreq", strconv.Itoa(n.idx))[2])
		require.Eventually(t, func() bool {
			return e.tap.recv[chunkHeartbeat].Load() > hbRecv && e.tap.sent[chunkHeartbeatAck].Load() > hbAckSent
		}, waitEvent, 10*time.Millisecond, "usrsctp's HEARTBEAT not acknowledged")
		ackRecv := e.tap.recv[chunkHeartbeatAck].Load()
		require.Eventually(t, func() bool { return e.tap.recv[chunkHeartbeatAck].Load() > ackRecv },
			waitEvent, 10*time.Millisecond, "no HEARTBEAT ACK from usrsctp to sctp-native's HEARTBEAT")

		p.send(t, "shutdown %d", n.idx)
		require.Equal(t, "0", p.wait(t, waitEvent, "shutdownreq", strconv.Itoa(n.idx))[2])
		require.NoError(t, n.ended(t), "SHUTDOWN by usrsctp")
		p.wait(t, waitEvent, "assoc", strconv.Itoa(n.idx), shutdownComp)
	})

	// The same bulk with sctp-native's packets at 1500 octets: every
	// message above ~1.4 KiB fragmented (§6.9) and many more packets per
	// window toward usrsctp's socket buffer.
	t.Run("RFC9260_6_9_BulkMTU1500", func(t *testing.T) {
		n := e.connect(t, 1500)
		e.bulk(t, n)
		require.NoError(t, n.a.Close())
		require.NoError(t, n.ended(t))
	})

	// RFC 6525 §5.2.2: usrsctp resets its outgoing streams after ordered
	// traffic, as a WebRTC data channel's close does (RFC 8831 §6.7); its
	// next ordered messages on them start again at SSN 0.
	t.Run("RFC6525_5_2_2_OutgoingResetByUsrsctp", func(t *testing.T) {
		n := e.connect(t, 0)
		before := []batch{
			{sid: 1, ppid: 300, size: 4096, count: 3, seed: 31},
			{sid: 2, ppid: 300, size: 100, count: 3, seed: 32},
		}
		for _, b := range before {
			e.peerSend(t, n.idx, b)
		}
		for _, b := range before {
			requireNativeGot(t, n, b)
		}
		p.send(t, "reset %d out 1 2", n.idx)
		require.Equal(t, "0", p.wait(t, waitEvent, "resetreq", strconv.Itoa(n.idx))[2])
		// usrsctp may reset the two streams with one request or two.
		reset := map[string]bool{}
		for k := 1; !reset["1"] || !reset["2"]; k++ {
			ev := p.waitN(t, waitEvent, k, "reset", strconv.Itoa(n.idx))[k-1]
			flags, err := strconv.Atoi(ev[2])
			require.NoError(t, err)
			require.NotZero(t, flags&resetOutgoingSSN, "reset event %v", ev)
			require.Zero(t, flags&(resetDenied|resetFailed), "sctp-native denied or failed the reset: %v", ev)
			for _, sid := range ev[3:] {
				reset[sid] = true
			}
		}
		after := []batch{
			{sid: 1, ppid: 301, size: 4096, count: 3, seed: 33},
			{sid: 2, ppid: 301, size: 100, count: 3, seed: 34},
		}
		for _, b := range after {
			e.peerSend(t, n.idx, b)
		}
		for _, b := range after {
			requireNativeGot(t, n, b)
		}
		ok, err := n.alive()
		require.True(t, ok, "association ended after the reset: %v", err)
		require.NoError(t, n.a.Close())
		require.NoError(t, n.ended(t))
	})

	// RFC 6525 §5.2.3: usrsctp asks sctp-native to reset its outgoing
	// streams (an Incoming SSN Reset Request); sctp-native's answer
	// resets toward usrsctp, and its messages keep flowing.
	t.Run("RFC6525_5_2_3_IncomingResetRequestedByUsrsctp", func(t *testing.T) {
		n := e.connect(t, 0)
		b1 := batch{sid: 3, unordered: true, ppid: 400, size: 2000, count: 2, seed: 41}
		require.NoError(t, nativeSend(n.a, b1))
		e.requirePeerGot(t, n.idx, b1)
		p.send(t, "reset %d in 3", n.idx)
		require.Equal(t, "0", p.wait(t, waitEvent, "resetreq", strconv.Itoa(n.idx))[2])
		ev := p.wait(t, waitEvent, "reset", strconv.Itoa(n.idx))
		flags, err := strconv.Atoi(ev[2])
		require.NoError(t, err)
		require.Zero(t, flags&(resetDenied|resetFailed), "sctp-native denied or failed the reset: %v", ev)
		b2 := batch{sid: 3, unordered: true, ppid: 401, size: 2000, count: 2, seed: 42}
		require.NoError(t, nativeSend(n.a, b2))
		e.requirePeerGot(t, n.idx, b2)
		ok, err := n.alive()
		require.True(t, ok, "association ended after the reset: %v", err)
		require.NoError(t, n.a.Close())
		require.NoError(t, n.ended(t))
	})

	// RFC 9260 §9.2: sctp-native shuts down; usrsctp sees the SHUTDOWN and
	// completes.
	t.Run("RFC9260_9_2_ShutdownByNative", func(t *testing.T) {
		n := e.connect(t, 0)
		b := batch{sid: 1, unordered: true, ppid: 500, size: 8 << 10, count: 4, seed: 51}
		require.NoError(t, nativeSend(n.a, b))
		require.NoError(t, n.a.Close())
		e.requirePeerGot(t, n.idx, b) // everything sent before Close arrives (§9.2)
		require.NoError(t, n.ended(t))
		p.wait(t, waitEvent, "shutdown-event", strconv.Itoa(n.idx))
		p.wait(t, waitEvent, "assoc", strconv.Itoa(n.idx), shutdownComp)
	})

	// RFC 9260 §9.1: usrsctp aborts; sctp-native reports the peer's ABORT.
	t.Run("RFC9260_9_1_AbortByUsrsctp", func(t *testing.T) {
		n := e.connect(t, 0)
		p.send(t, "abort %d", n.idx)
		require.Equal(t, "0", p.wait(t, waitEvent, "abortreq", strconv.Itoa(n.idx))[2])
		err := n.ended(t)
		require.ErrorIs(t, err, sctp.ErrAborted)
		var ae *sctp.AbortError
		require.True(t, errors.As(err, &ae))
		assert.False(t, ae.Local, "the ABORT came from usrsctp: %v", err)
		assert.Contains(t, ae.Reason, "peer.c abort", "the User-Initiated Abort's reason (RFC 9260 §3.3.10.12)")
	})

	// RFC 9260 §9.1: sctp-native aborts; usrsctp loses the association.
	t.Run("RFC9260_9_1_AbortByNative", func(t *testing.T) {
		n := e.connect(t, 0)
		require.NoError(t, n.a.Abort())
		require.ErrorIs(t, n.ended(t), sctp.ErrAborted)
		p.wait(t, waitEvent, "assoc", strconv.Itoa(n.idx), commLost)
	})

	// The wire, decoded by Wireshark: no malformed packet, no bad CRC32c
	// (RFC 9260 §6.8), no ERROR chunk (§3.3.10), and every chunk of the
	// cases above seen from the side that should send it.
	t.Run("Capture", func(t *testing.T) {
		p.stop()
		d := decode(t, e.capt.stop(), p.port)
		t.Logf("capture: %d packets; usrsctp sent %v, sctp-native sent %v; DATA fragments %d/%d, unordered %d/%d, ordered %d/%d; RE-CONFIG results %v; causes %v %v",
			d.frames, d.chunks[fromUsrsctp], d.chunks[fromNative], d.fragments[fromUsrsctp], d.fragments[fromNative],
			d.unordered[fromUsrsctp], d.unordered[fromNative], d.ordered[fromUsrsctp], d.ordered[fromNative],
			d.results, d.causes[fromUsrsctp], d.causes[fromNative])
		require.NotZero(t, d.frames)
		assert.Empty(t, d.malformed, "malformed packets")
		assert.Empty(t, d.badCRC, "bad CRC32c")
		assert.Zero(t, d.unchecked, "packets whose CRC32c tshark did not verify")
		assert.Empty(t, d.expertErrs, "expert warnings and errors")
		t.Logf("usrsctp's SACKs gap-acknowledging more than 100 TSNs: %d", d.largeGaps)
		for _, from := range []dir{fromUsrsctp, fromNative} {
			assert.Zero(t, d.chunks[from][chunkError], "ERROR chunks from %v", from)
			for _, c := range []int{chunkData, chunkSACK, chunkHeartbeat, chunkHeartbeatAck, chunkAbort, chunkShutdown} {
				assert.NotZero(t, d.chunks[from][c], "no chunk of type %d from %v", c, from)
			}
			assert.NotZero(t, d.fragments[from], "no fragmented message from %v", from)
		}
		assert.NotZero(t, d.chunks[fromUsrsctp][chunkReconfig], "no RE-CONFIG from usrsctp")
		assert.NotZero(t, d.chunks[fromNative][chunkReconfig], "no RE-CONFIG answer from sctp-native")
		assert.NotZero(t, d.ordered[fromUsrsctp], "no ordered DATA from usrsctp")
		assert.NotZero(t, d.unordered[fromUsrsctp], "no unordered DATA from usrsctp")
		assert.Zero(t, d.ordered[fromNative], "sctp-native sent ordered DATA")
		client, server := fromNative, fromUsrsctp
		if usrsctpClient {
			client, server = server, client
		}
		for _, c := range []int{chunkInit, chunkCookieEcho} {
			assert.NotZero(t, d.chunks[client][c], "no chunk of type %d from the client %v", c, client)
		}
		for _, c := range []int{chunkInitAck, chunkCookieAck} {
			assert.NotZero(t, d.chunks[server][c], "no chunk of type %d from the server %v", c, server)
		}
	})
}
