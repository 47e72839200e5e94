package sctp

import (
	"errors"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/ccname"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/tracing"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/handshake"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// Association is one SCTP association of the project's own stack, over
// UDP (RFC 6951). It is built for DDP (RFC 5043): user messages are sent
// unordered, one per DATA chunk when they fit the path, and delivered
// whole.
//
// One mutex guards the protocol state: a writer queues and sends under it
// from its own goroutine; the reading goroutine processes each packet
// under it and hands messages to a delivery goroutine, so a blocking
// receive callback never stops acknowledgements; one OS timer drives
// every protocol timer.
type Association struct {
	mu    sync.Mutex
	cfg   Config
	state State

	tcb    tcb             // what the two ends agreed on (RFC 9260 §14)
	hs     *handshakeState // until ESTABLISHED (active side only); then nil
	io     ioShell         // socket, timers, writers' queue
	reconf reconfState     // RE-CONFIG, RFC 6525

	// rxBorrowed: the packet being received lies in a buffer the
	// association may not keep; every message is copied out. rxDense: it
	// lies in a coalesced read that fills at least half its buffer, whose
	// messages are delivered from it, however small, rather than copied.
	rxBorrowed, rxDense bool
	// corked counts the packet octets of messages queued by WriteMsgMore
	// since the last transmission.
	corked int
	// copying counts the writers that were granted space (grantWriters)
	// and have not queued their message yet: while one is still copying,
	// the others queue without transmitting, and the last transmits for
	// all of them (writeMsg); deferred says that one did not transmit
	// for that reason since the last transmission.
	copying  int
	deferred bool

	// paths are the peer's destination addresses (RFC 9260 §6.4), each
	// with its own RTO, congestion window and probing; primary indexes
	// the one data goes to. Today there is one, paths[0].
	paths   []*path
	primary int
	mh      *multihome // several peer or local addresses; nil: one path
	// plps is the PLPMTUD state (RFC 8899) of each destination probed:
	// the one path's, or each confirmed path's of a multihomed
	// association (RFC 9260 §7.3: an estimate per destination).
	plps []*plpmtud
	// maxPacket is the largest SCTP packet: the smallest PLPMTU of plps
	// less the IP and UDP headers.
	maxPacket int
	maxMsg    atomic.Int64 // MaxMessage of maxPacket, read without mu

	// Send side.
	oq          *outstandingQueue
	sent        []txChunk // by oq.Index(tsn)
	pend        []txChunk // not yet given a TSN
	pendHead    int
	sndBuffered int // buffer octets held in pend and sent
	// burstFreed counts the octets that left the flight (acknowledged or
	// marked for retransmission) since the last transmission: with
	// Max.Burst, what the next may send (burstBudget); burstAt is when a
	// SACK last added to it.
	burstFreed int
	burstAt    time.Time
	errCount   int // against Association.Max.Retrans (§8.1)
	fastRtx    bool
	gaps       []wire.GapAckBlock
	dups       []uint32
	ctrl       []byte // control chunks to bundle into the next packet

	// Receive side.
	rt       *recvTracker
	rs       *reassembler
	rxGaps   []wire.GapAckBlock
	rxDups   []uint32
	rxQueued int // memory queued for delivery (charged to rxAcct)
	// rxAcct is the association's share of the process-wide memory
	// budget: reassembly, the delivery queue and the packet buffers it
	// holds are charged to it; a_rwnd is what is left (rwnd).
	rxAcct *membudget.Account
	// rxPktCharged: the packet being received is charged already (a
	// message of it is delivered from its buffer).
	rxPktCharged bool
	// rxPktCap is the capacity of the buffer of the packet being received
	// (0 when borrowed): what delivering from it holds, and is charged.
	rxPktCap int
	advRwnd  uint32 // a_rwnd of the last SACK
	// rxCost is what a received octet of user data is charged, in 1/1024
	// (its buffer's class and bookkeeping), smoothed over the DATA
	// received: a_rwnd offers the free share in octets it can hold.
	// rxCostPeak is the dearest recent read (foldRxCost); rxCostCharge
	// and rxCostOctets are what noteRxCost noted since the last fold.
	rxCost, rxCostPeak         int64
	rxCostCharge, rxCostOctets int64

	// Answers to INITs and COOKIE ECHOs after the start (collisions,
	// unexpected INITs, a restarted peer) and the end.
	signer       *handshake.CookieSigner // INIT collisions, INITs on an established association
	verifyCookie func(wire.Header, wire.Chunk, netip.AddrPort) (handshake.Cookie, error)
	initAcks     *handshake.TokenBucket // answers to unexpected INITs (§5.2.2)
	restart      *peerRestart           // set when the peer restarted (§5.2.4 case A)
	// restartPending: restart is set (read without mu on the receive path).
	restartPending atomic.Bool
	estab          chan struct{} // closed once ESTABLISHED or failed
	estabDone      bool
	closing        bool // Close called
	err            error
	done           chan struct{}

	// Delivery.
	dq deliveryQueue
	// started: the delivery goroutine runs, for the user's Start or to
	// discard what an association that ended unstarted holds
	// (discardUnstarted); userStarted: Start was called.
	started, userStarted atomic.Bool
	userClosed           atomic.Bool

	stats assocCounters
}

// tcb is the connection block of an association (RFC 9260 §14): the
// tags, Initial TSN, ports and what the peer's INIT or INIT ACK said.
// It is set once, at the start (adoptPeer, adoptCookie, DialConn).
type tcb struct {
	localTag, peerTag     uint32
	localPort, peerPort   uint16
	localInitialTSN       uint32
	outStreams, inStreams int // negotiated (§5.1.1)
	peerAdaptation        uint32
	hasPeerAdaptation     bool
	peerReconfig          bool // the peer supports RE-CONFIG (RFC 6525)
	// zeroTx: packets to the peer go with a zero checksum (RFC 9653
	// §5.2: Config.ZeroChecksum and the peer announced EDMID 1).
	zeroTx bool
}

// handshakeState is what only the active side's start needs (RFC 9260
// §5.1): our INIT, the peer's State Cookie and the retransmission counts.
// It is dropped once ESTABLISHED (establish).
type handshakeState struct {
	initChunk    []byte
	cookie       []byte
	initRetries  int
	staleRetries int // Stale Cookie ERRORs taken (§5.2.6)
}

// ioShell is an association's I/O: the packet output, batching, the
// packet buffer and its header, the protocol timers and the writers
// waiting for send-buffer space.
type ioShell struct {
	out func([]byte) error // sends one packet to the peer
	// batch, if not nil, gathers the packets of one transmission
	// (batching set) into runs sent with one system call each.
	batch    *txBatch
	batching bool
	// writerTx: the transmission is a writer's (queue), not a SACK's or
	// a timer's (burstDefer).
	writerTx bool
	// rxRun: the receive path is inside a read of several packets
	// (UDP_GRO, receiveSegments): their messages go to the delivery
	// queue as one entry, and what they trigger is transmitted once,
	// after the last.
	rxRun bool
	// runRefs: a message of the read being received points into its
	// buffer (receiveSegments hands the buffer to the delivery queue).
	runRefs     bool
	closeSocket func() // the active side's own socket
	release     func() // a Listener's bookkeeping
	laddr       net.Addr
	localAP     netip.AddrPort // for Config.Tap
	pkt         []byte
	hdr         [wire.HeaderLen]byte
	// crcShift is crc32c.Shift(crcShiftLen): the last length of data
	// whose CRC32c a packet combined with its headers' (addChunk).
	crcShift, crcShiftLen uint32
	// crcTab is the shift as tables for the length that repeats, crcMiss
	// the packets in a row of length crcShiftLen (setChecksumTail).
	crcTab  *wire.TailShift
	crcMiss int

	timers     timers
	wake       *wakeup
	refused    int // ICMP port unreachable reports since the last packet from the peer
	refusedErr error

	// writers wait for send-buffer space in arrival order (WriteMsg);
	// as many as fit are granted space and woken when a SACK frees a
	// quarter of the buffer (grantWriters), every one when the
	// association ends or shuts down. waiterPool recycles their wake-up
	// channels.
	writers    []*spaceWaiter
	waiterPool []*spaceWaiter
}

// reconfState is the stream reset state (RFC 6525 §5.2): the next
// Re-configuration Request Sequence Number expected of the peer
// (peerSeq), the result of the last request (answered, last), a stream
// reset answered "In progress" (pending). outSeq is our next request's
// number, outReq our Outgoing SSN Reset Request until its response
// (lastOut: it answered the peer's last request, §5.2.3).
type reconfState struct {
	peerSeq  uint32
	last     uint32
	answered bool
	lastOut  bool
	pending  *pendingReset
	outSeq   uint32
	outReq   []byte
}

// txChunk is one DATA chunk from WriteMsg until it is acknowledged: the
// chunk, padded, at buf[wire.HeaderLen:wire.HeaderLen+n].
type txChunk struct {
	buf *[]byte
	n   int
	// crc is the CRC32c of the chunk past its DATA header (user data and
	// padding), taken while the data was copied in, if hasCRC: a packet
	// of this chunk alone then checksums only the headers (addChunk).
	crc    uint32
	hasCRC bool
}

func (c *txChunk) chunk() []byte { return (*c.buf)[wire.HeaderLen : wire.HeaderLen+c.n] }

// assocCounters are an association's counters; those written under mu.
type assocCounters struct {
	packetsSent, packetsRecv   uint64
	dataSent, dataRecv         uint64
	retransmits, fastRetrans   uint64
	t3Expiries, lostRetrans    uint64
	sacksSent, sacksRecv       uint64
	dupTSNs, rxDropped         uint64
	heartbeats, sendErrors     uint64
	badTag, badChunks          uint64
	invalidStream, discarded   uint64
	userMsgsSent, userMsgsRecv uint64
	offloadRecv, unbound       uint64
}

// Stats are an association's counters and path figures.
type Stats struct {
	State State
	// OutStreams and InStreams are the association's outbound and inbound
	// streams (RFC 9260 §5.1.1); PeerAdaptation the Adaptation Layer
	// Indication of the peer's INIT or INIT ACK, if HasPeerAdaptation
	// (RFC 5061 §4.2.6; RFC 5043 §5.1). They are set at the start.
	OutStreams, InStreams int
	PeerAdaptation        uint32
	HasPeerAdaptation     bool
	// ZeroChecksum is set where packets to the peer go with a zero
	// checksum (RFC 9653: Config.ZeroChecksum, and the peer announced it).
	ZeroChecksum bool
	// Packets and DATA chunks sent and received; Retransmits counts DATA
	// chunks sent again (T3-rtx and Fast Retransmit), FastRetransmits the
	// Fast Retransmit events, T3Expiries the T3-rtx expiries,
	// LostRetransmits the fast retransmissions found lost and sent again
	// before T3-rtx (outstandingQueue.OnSACK).
	PacketsSent, PacketsReceived       uint64
	DataChunksSent, DataChunksReceived uint64
	Retransmits, FastRetransmits       uint64
	T3Expiries, LostRetransmits        uint64
	SACKsSent, SACKsReceived           uint64
	DuplicateTSNs                      uint64
	MessagesSent, MessagesReceived     uint64
	// ReceiveDropped counts DATA chunks dropped for want of room (the
	// peer overran our window); SendErrors failed socket writes;
	// ForeignTag packets dropped for their Verification Tag; BadChunks
	// malformed chunks; InvalidStream DATA chunks on a stream beyond the
	// inbound streams (acknowledged, discarded and answered with an
	// ERROR, RFC 9260 §6.5).
	ReceiveDropped, SendErrors, ForeignTag, BadChunks uint64
	InvalidStream                                     uint64
	// Discarded counts chunks the association's state does not take (a
	// DATA chunk before it is established, a COOKIE ACK once it is: the
	// state table's empty entries, assoc_statetable.go).
	Discarded uint64
	// Unbound counts packets a multihomed association's wildcard socket
	// received at a local address it was not given (Config.LocalAddr),
	// dropped.
	Unbound uint64
	// OffloadSends counts the system calls that sent more than one
	// packet (UDP_SEGMENT, or sendmmsg to a local address),
	// OffloadReceives the reads that received more than one (UDP_GRO);
	// see Config.NoOffload.
	OffloadSends, OffloadReceives uint64
	// SRTT, RTO and whether an RTT was measured; Cwnd, SSThresh, Flight
	// and PeerRwnd in octets.
	SRTT, RTO                        time.Duration
	RTTMeasured                      bool
	Cwnd, SSThresh, Flight, PeerRwnd int
	// MaxPacket is the largest SCTP packet sent.
	MaxPacket int
	// PLPMTUD is the state and counters of RFC 8899 probing.
	PLPMTUD PLPMTUDStats
	// Paths are the destination addresses of a multihomed association
	// (RFC 9260 §6.4), nil for one with a single address.
	Paths []PathStats
}

// newAssociation returns an association in CLOSED state.
func newAssociation(cfg Config, out func([]byte) error, laddr, raddr net.Addr, maxPacket int) *Association {
	a := &Association{
		cfg:       cfg,
		io:        ioShell{out: out, laddr: laddr, pkt: make([]byte, wire.HeaderLen, maxPacket)},
		paths:     []*path{newPath(cfg, raddr)},
		maxPacket: maxPacket,
		estab:     make(chan struct{}),
		done:      make(chan struct{}),
	}
	a.maxMsg.Store(int64(maxMessageFor(maxPacket)))
	a.dq.init(a)
	a.io.wake = newWakeupFunc(a.onTimer)
	return a
}

// initTCB sets up the send and receive state once both INITs are known
// (RFC 9260 §5.1, the TCB of §14). Called with mu held.
func (a *Association) initTCB(peerInitialTSN, peerARwnd uint32, outStreams, inStreams int) {
	a.tcb.outStreams, a.tcb.inStreams = max(outStreams, 1), max(inStreams, 1)
	// Chunks in flight at once: 2048 descriptors (about 56 KiB with their
	// buffer slots) hold a window of 2048 packets of large messages, or
	// 2048 small ones; an idle association costs little.
	chunks := min(max(a.cfg.SendBuffer/bufClasses[1], 64), 1<<16)
	a.oq = newOutstandingQueue(a.tcb.localInitialTSN, chunks)
	a.sent = make([]txChunk, a.oq.Cap())
	ccfg := congestionConfig{MTU: a.maxPacket, PMDCS: a.maxPacket - wire.HeaderLen, PeerARwnd: peerARwnd,
		Cubic: a.cfg.CongestionControl == ccname.CongestionCUBIC, HyStart: a.cfg.SlowStart == ccname.SlowStartHyStart}
	a.primaryPath().cc = newCongestion(ccfg)
	if a.mh != nil {
		a.mhInitWindows(ccfg)
	}
	// RFC 6525 §4.1: request numbers start at each side's Initial TSN.
	a.reconf.peerSeq, a.reconf.outSeq = peerInitialTSN, a.tcb.localInitialTSN
	a.rt = newRecvTracker(peerInitialTSN, recvTrackerConfig{SACKDelay: a.cfg.SACKDelay})
	a.initReceiveBudget()
	a.advRwnd = uint32(a.cfg.ReceiveBuffer)
	a.setHeader()
}

func (a *Association) setHeader() {
	h := wire.AppendHeader(a.io.hdr[:0], wire.Header{SrcPort: a.tcb.localPort, DstPort: a.tcb.peerPort, VerificationTag: a.tcb.peerTag})
	copy(a.io.hdr[:], h)
	copy(a.io.pkt[:wire.HeaderLen], a.io.hdr[:])
}

// Start begins the delivery of received user messages: fn gets each one
// with its stream identifier and PPID; b is valid only during the call.
// Calls never overlap and come in the order SCTP delivered the messages.
// When the association has ended and every message received before has
// been handed over, done is called once with the cause (nil after a
// graceful shutdown). Messages that arrive before Start are held (within
// the receive buffer), unless the association is aborted or closed by
// the user first: then they are discarded, and done is called at once.
// Start must be called once.
func (a *Association) Start(fn func(sid uint16, ppid uint32, b []byte), done func(err error)) {
	if !a.userStarted.CompareAndSwap(false, true) {
		panic("sctp: Association.Start called twice")
	}
	if !a.started.CompareAndSwap(false, true) {
		go done(a.Err()) // discarded at its end (discardUnstarted)
		return
	}
	a.dq.fn, a.dq.doneFn = fn, done
	go a.dq.run()
}

// discardUnstarted frees what an association that ends before Start
// holds for delivery, when no Start is to hand it over: it was aborted
// (RFC 9260 §9.1, by either side or reclaimed for memory) or closed by
// its user. After a graceful end by the peer it is kept for Start: the
// peer's messages were acknowledged. mu is held.
func (a *Association) discardUnstarted() {
	if a.started.CompareAndSwap(false, true) {
		go a.dq.run() // no callbacks: it frees, releases and closes the account
	}
}

// MaxMessage returns the largest user message sent in one DATA chunk, in
// one packet (RFC 9260 §1.3, PMDCS less the DATA chunk header, rounded
// down to whole words so that the chunk's padding fits too). Longer
// messages are fragmented (§6.9).
// It follows the packetization layer path MTU (RFC 8899: PLPMTUD) where
// the association probes its path.
func (a *Association) MaxMessage() int { return int(a.maxMsg.Load()) }

// LocalAddr and RemoteAddr return the UDP addresses of the association.
func (a *Association) LocalAddr() net.Addr { return a.io.laddr }

// RemoteAddr returns the peer's UDP address.
// It follows the peer's UDP port when a NAT rebinds it (RFC 6951 §5.4).
func (a *Association) RemoteAddr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.primaryPath().raddr
}

// Done is closed when the association has ended; Err then returns why.
func (a *Association) Done() <-chan struct{} { return a.done }

// Err returns why the association ended: nil after a graceful shutdown,
// or before the end.
func (a *Association) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Stats returns the association's counters.
func (a *Association) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	dst := a.primaryPath()
	c := &a.stats
	var paths []PathStats
	if a.mh != nil {
		paths = a.mhPathStats()
	}
	return Stats{Paths: paths, State: a.state,
		OutStreams: a.tcb.outStreams, InStreams: a.tcb.inStreams,
		PeerAdaptation: a.tcb.peerAdaptation, HasPeerAdaptation: a.tcb.hasPeerAdaptation, ZeroChecksum: a.tcb.zeroTx,
		PacketsSent: c.packetsSent, PacketsReceived: c.packetsRecv,
		DataChunksSent: c.dataSent, DataChunksReceived: c.dataRecv,
		Retransmits: c.retransmits, FastRetransmits: c.fastRetrans, T3Expiries: c.t3Expiries, LostRetransmits: c.lostRetrans,
		SACKsSent: c.sacksSent, SACKsReceived: c.sacksRecv, DuplicateTSNs: c.dupTSNs,
		MessagesSent: c.userMsgsSent, MessagesReceived: c.userMsgsRecv,
		ReceiveDropped: c.rxDropped, SendErrors: c.sendErrors, ForeignTag: c.badTag, BadChunks: c.badChunks, InvalidStream: c.invalidStream, Discarded: c.discarded,
		Unbound: c.unbound, OffloadSends: a.offloadSends(), OffloadReceives: c.offloadRecv,
		SRTT: dst.rto.SRTT(), RTO: dst.rto.RTO(), RTTMeasured: dst.rto.Measured(),
		Cwnd: dst.cc.Cwnd(), SSThresh: dst.cc.SSThresh(), Flight: dst.cc.Flight(), PeerRwnd: dst.cc.Rwnd(),
		MaxPacket: a.maxPacket, PLPMTUD: a.plpmtudStats(),
	}
}

// sendPacket transmits a finished packet (checksum set). mu is held.
func (a *Association) sendPacket(b []byte) { a.sendPacketFrom(b, false) }

// sendPacketFrom is sendPacket; stable says that b stays unchanged until
// the transmission ends (a chunk's own buffer), so that a batch may hold
// it uncopied. mu is held.
func (a *Association) sendPacketFrom(b []byte, stable bool) {
	a.stats.packetsSent++
	if a.cfg.Tap != nil {
		a.tap(true, a.tapRemote(true), b)
	}
	var err error
	switch {
	case len(a.plps) > 0 && len(b) > a.maxPacket:
		a.flushBatch()
		err = a.sendOversize(b)
	case a.io.batching:
		if a.mh != nil {
			a.mhCount(b)
		}
		err = a.io.batch.add(b, stable)
	default:
		err = a.io.out(b)
	}
	a.sendFailed(err)
}

// offloadSends returns the batch's count of multi-packet sends.
func (a *Association) offloadSends() uint64 {
	if a.mh != nil {
		return a.mhOffloadSends()
	}
	if a.io.batch == nil {
		return 0
	}
	return a.io.batch.offloaded
}

// flushBatch sends the packets the batch holds. mu is held.
func (a *Association) flushBatch() {
	if a.io.batch != nil {
		a.sendFailed(a.io.batch.flush())
	}
}

// sendFailed accounts for a send error (nil: none). mu is held.
func (a *Association) sendFailed(err error) {
	if err != nil {
		// A lost packet to SCTP: retransmission recovers it.
		a.stats.sendErrors++
		var to netip.AddrPort
		if a.mh != nil {
			a.mhSendFailed(err, time.Now())
			to = a.mh.dst
		}
		if s := a.proberFor(to); s != nil && s.p != nil && errors.Is(err, syscall.EMSGSIZE) {
			// The kernel learned a smaller path MTU; the PLPMTUD timer
			// applies it (not here: a packet is being built).
			s.tooBig = true
			a.io.timers.Set(timerPLPMTUD, time.Time{})
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			a.io.refused++
			a.io.refusedErr = err
		}
	}
}

// portUnreachable takes an ICMP port unreachable reported on the active
// side's connected socket: nobody listens at the peer's port any more (a
// killed process). RFC 6951 §5.5 lets the ICMP reach SCTP; two with no
// packet from the peer between them end the association, so that a single
// stray or spoofed ICMP does not. mu is held.
func (a *Association) portUnreachable(err error) {
	if err != nil {
		a.io.refused++
		a.io.refusedErr = err
	}
	if a.io.refused >= 2 && a.state != stateClosed {
		a.terminate(&AbortError{Reason: "peer port unreachable (ICMP): " + a.io.refusedErr.Error(), Cause: a.io.refusedErr})
	}
}

// sendChunks sends the chunks in b, bundled in one packet with the
// association's tag. mu is held.
func (a *Association) sendChunks(b []byte) {
	p := append(append(a.io.pkt[:0], a.io.hdr[:]...), b...)
	a.seal(p)
	a.sendPacket(p)
}

// arm points the OS timer at the earliest protocol deadline if it is
// earlier than the one it is armed for (Wakeup.Sync): in the steady state
// the T3-rtx and delayed-ack deadlines only move later and the timer is
// left alone; a timer armed too early fires, finds nothing expired and
// re-arms. mu is held.
func (a *Association) arm(now time.Time) { a.io.wake.Sync(&a.io.timers, now) }

// terminate ends the association: every timer stops, blocked writers and
// the dialer wake up, held chunks go back to the pools, and the delivery
// goroutine hands over what is queued and then reports err. mu is held.
func (a *Association) terminate(err error) {
	if isClosed(a.done) {
		return
	}
	a.state = stateClosed
	a.err = err
	if a.cfg.Tracer != nil {
		a.traceEvent(tracing.Event{Kind: tracing.EventClosed, Err: err}, time.Now())
	}
	a.io.timers.StopAll()
	a.io.wake.Stop()
	for i := range a.sent {
		putBuf(a.sent[i].buf)
		a.sent[i] = txChunk{}
	}
	for i := a.pendHead; i < len(a.pend); i++ {
		putBuf(a.pend[i].buf)
	}
	a.pend, a.pendHead, a.sndBuffered, a.copying = a.pend[:0], 0, 0, 0
	if a.rs != nil {
		a.rs.Reset() // what is queued for delivery is released as it is handed over
	}
	if !a.estabDone {
		a.estabDone = true
		close(a.estab)
	}
	close(a.done)
	a.wakeAllWriters()
	a.dq.end()
	if err != nil || a.userClosed.Load() {
		a.discardUnstarted()
	}
	if a.io.closeSocket != nil {
		go a.io.closeSocket()
	}
	if a.io.release != nil {
		// At once, so that the next packet from the peer gets the answer
		// of RFC 9260 §8.4 (a listener's table lock nests inside mu).
		a.io.release()
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// establish enters ESTABLISHED. mu is held.
func (a *Association) establish(now time.Time) {
	a.state = stateEstablished
	// The start is over: its state goes, and with it T1 (§5.1).
	a.hs = nil
	a.io.timers.Stop(timerT1Init)
	a.io.timers.Stop(timerT1Cookie)
	if !a.estabDone {
		a.estabDone = true
		close(a.estab)
	}
	a.restartHeartbeat(now)
	a.startPLPMTUD(now)
}

// abortLocked sends an ABORT with the given causes and ends the
// association with err. mu is held.
func (a *Association) abortLocked(causes []byte, err error) {
	if a.state == stateClosed {
		return
	}
	if a.tcb.peerTag != 0 {
		b := (&wire.Abort{Causes: causes}).Append(a.ctrl[:0])
		a.sendChunks(b)
		a.ctrl = b[:0]
	}
	a.terminate(err)
}

// Abort ends the association at once with an ABORT carrying a
// User-Initiated Abort cause (RFC 9260 §9.1). Messages not yet
// acknowledged are lost; blocked writers return ErrClosed. The receive
// callback is not called after Abort returns: Abort waits for a call in
// progress, unless it is called from that call.
func (a *Association) Abort() error {
	a.userClosed.Store(true)
	defer a.dq.quiesce() // after mu: the callback may be waiting for it
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state == stateClosed {
		a.discardUnstarted() // ended gracefully, never started
		return nil
	}
	causes := wire.AppendCause(nil, wire.CauseUserInitiatedAbort, nil)
	a.abortLocked(causes, &AbortError{Local: true, Reason: "aborted by the local user"})
	return nil
}

// Close shuts the association down gracefully (RFC 9260 §9.2): no more
// messages are taken, those queued are sent and acknowledged, then
// SHUTDOWN, SHUTDOWN ACK and SHUTDOWN COMPLETE close it. Close waits for
// the end (bounded by Association.Max.Retrans while data is outstanding,
// then by the T5-shutdown-guard timer, 5 RTO.Max from the SHUTDOWN) and
// returns nil if it was graceful. The receive callback is not called after Close
// returns: Close waits for a call in progress, unless it is called from
// that call.
func (a *Association) Close() error {
	a.userClosed.Store(true)
	defer a.dq.quiesce() // after mu: the callback may be waiting for it
	a.mu.Lock()
	now := time.Now()
	switch a.state {
	case stateClosed:
		a.discardUnstarted() // ended gracefully, never started
		a.mu.Unlock()
		return nil
	case stateCookieWait, stateCookieEchoed:
		a.abortLocked(wire.AppendCause(nil, wire.CauseUserInitiatedAbort, nil), ErrClosed)
		a.mu.Unlock()
		return nil
	case stateEstablished:
		a.state = stateShutdownPending
	}
	a.closing = true
	a.wakeAllWriters()
	a.checkShutdown(now)
	a.transmit(now) // the SHUTDOWN, if nothing is outstanding (and arm)
	a.mu.Unlock()
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil && a.err != ErrClosed {
		return a.err
	}
	return nil
}

// spaceWaiter is one writer waiting for send-buffer space since a time,
// for size octets of buffers; granted is set (mu held) once the space is
// reserved for it.
type spaceWaiter struct {
	ch      chan struct{}
	since   time.Time
	size    int
	granted bool
}

// writerPatience is how long the first writer waiting for send-buffer
// space lets later writers go ahead of it: until then a writer whose
// message fits is not held back (the writers keep the pipe full); after
// it, every writer queues behind the waiting ones, so that none starves.
const writerPatience = 5 * time.Millisecond

// mustQueue reports whether a writer arriving at now, whose message fits
// or not, waits in line. mu is held.
func (a *Association) mustQueue(now time.Time, fits bool) bool {
	return !fits || (len(a.io.writers) > 0 && now.Sub(a.io.writers[0].since) >= writerPatience)
}

// corkTail is the most a message that completes what WriteMsgMore holds
// may take beyond the send buffer (completesCork): a DDP Message's last
// segment after its full-sized ones (a 64 KiB RDMA Write over a 64 KiB
// MTU is a segment of 65,442 octets and one of 94).
const corkTail = 4096

// completesCork reports whether a message of size octets that does not
// fit, or would queue behind waiting writers, goes now anyway: a small
// one while WriteMsgMore holds octets (the rest of a message whose head
// is held, as DDP sends them), within corkTail beyond the send buffer.
// Queued, it would send the held head alone and wait behind every other
// writer for its few octets: two system calls and a wait per message
// where one sendmmsg carries both (with 256 streams writing 64 KiB
// messages, half the packets went alone). mu is held.
func (a *Association) completesCork(size int) bool {
	return a.corked > 0 && size <= corkTail && a.sndBuffered+size <= a.cfg.SendBuffer+corkTail
}

// fitsSend reports whether size more octets of buffers fit the send
// buffer (an empty buffer takes any message). mu is held.
func (a *Association) fitsSend(size int) bool {
	return a.sndBuffered == 0 || a.sndBuffered+size <= a.cfg.SendBuffer
}

// grantWriters reserves send-buffer space for the writers waiting, in
// the order they arrived, as long as the next one fits, and wakes each:
// the writers served by one SACK go at once instead of each waking the
// next in turn (with a thousand writers, that chain of hand-offs left the
// processors idle a fifth of the time). mu is held.
func (a *Association) grantWriters() {
	n := 0
	for _, w := range a.io.writers {
		if !a.fitsSend(w.size) {
			break
		}
		a.sndBuffered += w.size
		a.copying++
		w.granted = true
		w.ch <- struct{}{} // capacity 1, one wake-up per wait
		n++
	}
	if n > 0 {
		k := copy(a.io.writers, a.io.writers[n:])
		clear(a.io.writers[k:])
		a.io.writers = a.io.writers[:k]
	}
}

// wakeAllWriters wakes every waiting writer so that it finds the
// association ending (writable fails). mu is held.
func (a *Association) wakeAllWriters() {
	for _, w := range a.io.writers {
		select {
		case w.ch <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// waitForSpace queues the caller behind the writers already waiting and
// returns once space for size octets is reserved for it (grantWriters),
// or with the error of writable and nothing reserved. mu is held, and
// released while waiting. (Later writers may go ahead of it for
// writerPatience: mustQueue.)
func (a *Association) waitForSpace(sid uint16, size int, now time.Time) error {
	var w *spaceWaiter
	if n := len(a.io.waiterPool); n > 0 {
		w, a.io.waiterPool = a.io.waiterPool[n-1], a.io.waiterPool[:n-1]
	} else {
		w = &spaceWaiter{ch: make(chan struct{}, 1)}
	}
	w.since, w.size, w.granted = now, size, false
	a.io.writers = append(a.io.writers, w)
	var err error
	for {
		a.mu.Unlock()
		<-w.ch
		a.mu.Lock()
		if w.granted {
			break
		}
		if err = a.writable(sid); err != nil {
			for i, x := range a.io.writers {
				if x == w {
					copy(a.io.writers[i:], a.io.writers[i+1:])
					a.io.writers[len(a.io.writers)-1] = nil
					a.io.writers = a.io.writers[:len(a.io.writers)-1]
					break
				}
			}
			break
		}
		// A wake-up meant for the end of the association that did not
		// come (or a stale one): keep waiting.
	}
	select { // a wake-up that came too late
	case <-w.ch:
	default:
	}
	a.io.waiterPool = append(a.io.waiterPool, w)
	return err
}
