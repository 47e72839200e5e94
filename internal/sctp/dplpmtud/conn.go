package dplpmtud

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
)

// PionMaxPacket is the largest SCTP packet github.com/pion/sctp v1.11.3
// receives (its fixed 8192-octet read buffer): the largest path MTU worth
// probing for SCTP over UDP is this plus the UDP and IP headers.
const PionMaxPacket = 8192

// ConnConfig configures a Conn. Zero fields take the defaults.
type ConnConfig struct {
	// Prober configures RFC 8899 probing. Prober.Max defaults to the
	// kernel's IP_MTU at creation (the first hop's MTU) capped at
	// MaxPacket plus the UDP and IP headers.
	Prober ProberConfig
	// MaxPacket is the largest SCTP packet the stack above sends or
	// receives (default PionMaxPacket).
	MaxPacket int
	// NoProbing turns RFC 8899 probing off: the path MTU then follows
	// only the kernel (IP_MTU, EMSGSIZE, ICMP), starting at the first
	// hop's MTU.
	NoProbing bool
	// KernelMTU and SetDF replace the kernel view of a wrapped connected
	// *net.UDPConn (IP_MTU and IP_MTU_DISCOVER on it) for a conn that
	// shares an unconnected socket with other peers: KernelMTU then reads
	// the path MTU towards this peer (e.g. IP_MTU of a connected helper
	// socket that never sends: the kernel's path MTU cache is per
	// destination), SetDF switches DF on the shared socket (on=false
	// must nest: DF stays off until every off is matched by an on).
	KernelMTU func() (int, error)
	SetDF     func(on bool) error
}

// Conn wraps the connected UDP socket under a userspace SCTP stack (SCTP
// over UDP, RFC 6951) and owns the path MTU of its single path:
type Conn struct {
	//   - It turns path MTU discovery on (IP_PMTUDISC_DO), so no datagram is
	//     fragmented by IP: a datagram above the kernel's path MTU fails with
	//     EMSGSIZE and an ICMP "fragmentation needed" (RFC 1191) or "packet
	//     too big" (RFC 8201) lowers the kernel's path MTU, which Conn reads
	//     (IP_MTU / IPV6_MTU) and applies at once. The EMSGSIZE the kernel
	//     reports on a connected socket after such an ICMP never reaches the
	//     stack above (pion ends the association on any read or write error).
	//   - It runs RFC 8899 DPLPMTUD with padded HEARTBEAT probes (see
	//     heartbeatProbe) to find the path MTU where no ICMP arrives, and
	//     hides the HEARTBEAT ACKs from the stack above.
	//   - It re-bundles every outgoing SCTP packet larger than the path MTU
	//     into several packets, chunk by chunk (splitPacket), so the stack
	//     above can keep a fixed, large packet budget (pion's MTU cannot
	//     change after association set-up). A single chunk larger than the
	//     path MTU — a DATA chunk sent before the MTU fell, whose TSN SCTP
	//     cannot re-fragment (RFC 4960 §6.9) — is sent with DF clear and so
	//     IP-fragmented at the sender, as Linux SCTP does for such chunks and
	//     as RFC 8899 §5.4 allows; Stats.Fragmentable counts them.
	//
	// The path MTU, read with Path().MTU(), is what the SCTP adaptation sizes
	// its messages by (pmtu.SCTPMaxMessage). Read and Write may be called
	// concurrently with each other; Conn serialises writers.

	net.Conn
	kernelFn  func() (int, error) // nil: no kernel view
	setDF     func(on bool) error // nil: cannot switch DF
	ipv6      bool
	path      *Path
	maxPacket int

	mu        sync.Mutex
	prober    *Prober
	kernelMTU int // last IP_MTU read (0: unknown)
	hdr       wire.Header
	haveHdr   bool
	highTSN   uint32
	haveTSN   bool
	nonce     uint64
	scratch   []byte
	scratch2  []byte
	probeBuf  []byte
	noProbing bool

	wake      chan struct{}
	done      chan struct{}
	loopDone  chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// NewConn wraps c, normally a connected *net.UDPConn. Other net.Conns get
// the kernel view given in cfg (KernelMTU, SetDF) or none (tests,
// in-memory pipes): probing and re-bundling work regardless.
func NewConn(c net.Conn, cfg ConnConfig) (*Conn, error) {
	if cfg.MaxPacket <= 0 {
		cfg.MaxPacket = PionMaxPacket
	}
	pc := &Conn{
		Conn:      c,
		maxPacket: cfg.MaxPacket,
		noProbing: cfg.NoProbing,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		loopDone:  make(chan struct{}),
	}
	if ua, ok := c.RemoteAddr().(*net.UDPAddr); ok {
		pc.ipv6 = ua.IP.To4() == nil
	}
	ceiling := cfg.MaxPacket + pmtu.UDPHeaderLen + pmtu.IPHeaderLen(pc.ipv6)
	pc.kernelFn, pc.setDF = cfg.KernelMTU, cfg.SetDF
	if uc, ok := c.(*net.UDPConn); ok && pc.kernelFn == nil {
		rc, err := uc.SyscallConn()
		if err != nil {
			return nil, err
		}
		v6 := pc.ipv6
		pc.kernelFn = func() (int, error) { return UDPPathMTU(rc, v6) }
		pc.setDF = func(on bool) error { return setDontFragment(rc, v6, on) }
	}
	if pc.setDF != nil {
		if err := pc.setDF(true); err != nil {
			return nil, err
		}
	}
	if pc.kernelFn != nil {
		if m, err := pc.kernelFn(); err == nil && m > 0 {
			pc.kernelMTU = m
			ceiling = min(ceiling, m)
		}
	}
	pcfg := cfg.Prober
	if pcfg.Max <= 0 || pcfg.Max > ceiling {
		pcfg.Max = ceiling
	}
	pcfg = pcfg.withDefaults()
	pc.prober = NewProber(pcfg, time.Now())
	initial := pcfg.Base
	if cfg.NoProbing {
		initial = pcfg.Max
	}
	pc.path = NewPath(initial, 0, pcfg.Max)
	go pc.loop()
	return pc, nil
}

// Path returns the tracked path.
func (c *Conn) Path() *Path { return c.path }

// ProberState returns the RFC 8899 state.
func (c *Conn) ProberState() ProberState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prober.State()
}

// IPv6 reports whether the path is IPv6.
func (c *Conn) IPv6() bool { return c.ipv6 }

// MaxMessage is pmtu.SCTPMaxMessage of the current path MTU over UDP.
func (c *Conn) MaxMessage() int { return pmtu.SCTPMaxMessage(c.path.MTU(), c.ipv6, true) }

// Close stops probing and closes the socket.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		<-c.loopDone
		c.closeErr = c.Conn.Close()
	})
	return c.closeErr
}

func (c *Conn) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Conn) loop() {
	defer close(c.loopDone)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		c.mu.Lock()
		var dl time.Time
		if c.haveHdr && !c.noProbing {
			now := time.Now()
			if size, ok := c.prober.Next(now); ok {
				c.sendProbeLocked(size)
			}
			c.syncLocked(SourceProbe)
			dl = c.prober.Deadline()
		}
		c.mu.Unlock()
		d := time.Hour
		if !dl.IsZero() {
			d = max(time.Until(dl), 0)
		}
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-c.wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-c.done:
			return
		}
	}
}

// syncLocked copies the prober's PLPMTU into the path.
func (c *Conn) syncLocked(src Source) {
	if c.noProbing {
		return
	}
	v := c.prober.PLPMTU()
	if c.prober.State() == StateBase && src == SourceProbe && v < c.path.MTU() {
		src = SourceBlackHole
	}
	c.path.Set(v, src)
}

func (c *Conn) sendProbeLocked(size int) {
	c.nonce++
	pkt := size - pmtu.UDPHeaderLen - pmtu.IPHeaderLen(c.ipv6)
	c.probeBuf = appendProbePacket(c.probeBuf[:0], c.hdr, c.nonce, pkt)
	c.path.count(func(s *Stats) { s.ProbesSent++ })
	if _, err := c.Conn.Write(c.probeBuf); isTooBig(err) {
		c.tooBigLocked()
	}
}

func isTooBig(err error) bool { return err != nil && errors.Is(err, syscall.EMSGSIZE) }

// tooBigLocked applies the kernel's path MTU after an EMSGSIZE.
func (c *Conn) tooBigLocked() {
	c.path.count(func(s *Stats) { s.TooBig++ })
	if c.kernelFn == nil {
		return
	}
	m, err := c.kernelFn()
	if err != nil || m <= 0 {
		return
	}
	c.kernelMTU = m
	if c.noProbing {
		c.path.Set(m, SourceTooBig)
		return
	}
	c.prober.PacketTooBig(m, time.Now())
	c.syncLocked(SourceTooBig)
	c.poke()
}

func (c *Conn) packetLimit() int {
	m := c.path.MTU()
	if c.kernelMTU > 0 {
		m = min(m, c.kernelMTU)
	}
	return m - pmtu.UDPHeaderLen - pmtu.IPHeaderLen(c.ipv6)
}

// observeLocked learns the common header of the association from an
// outgoing packet and notices DATA retransmissions.
func (c *Conn) observeLocked(p []byte) {
	if len(p) < wire.HeaderLen+wire.ChunkHeaderLen {
		return
	}
	h, _ := wire.ParseHeader(p) // long enough
	if wire.ChunkType(p[wire.HeaderLen]) != wire.ChunkInit && h.VerificationTag != 0 {
		if !c.haveHdr || h != c.hdr {
			c.hdr, c.haveHdr = h, true
			c.poke()
		}
	}
	big := len(p)+pmtu.UDPHeaderLen+pmtu.IPHeaderLen(c.ipv6) > c.prober.cfg.Base
	retx := false
	dataTSNs(p, func(tsn uint32) {
		switch {
		case !c.haveTSN || int32(tsn-c.highTSN) > 0:
			c.highTSN, c.haveTSN = tsn, true
		default:
			retx = true
		}
	})
	if retx && big && !c.noProbing {
		c.prober.SuspectLoss(time.Now())
		c.poke()
	}
}

// Write sends one SCTP packet, re-bundled to the path MTU if needed. An
// EMSGSIZE is absorbed (the path MTU is lowered and the packet re-sent
// cut to it): it never reaches the caller.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observeLocked(p)
	limit := c.packetLimit()
	if len(p) > limit {
		c.path.count(func(s *Stats) { s.Resplit++ })
	}
	var err error
	c.scratch, err = splitPacket(p, limit, c.scratch, c.writePieceLocked)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *Conn) writePieceLocked(piece []byte, oversize bool) error {
	if oversize {
		return c.writeFragmentableLocked(piece)
	}
	_, err := c.Conn.Write(piece)
	if !isTooBig(err) {
		return err
	}
	c.tooBigLocked()
	limit := c.packetLimit()
	c.scratch2, err = splitPacket(piece, limit, c.scratch2, func(pp []byte, over bool) error {
		if over {
			return c.writeFragmentableLocked(pp)
		}
		_, err := c.Conn.Write(pp)
		if isTooBig(err) {
			// The path MTU fell again meanwhile: SCTP retransmits.
			return nil
		}
		return err
	})
	return err
}

func (c *Conn) writeFragmentableLocked(p []byte) error {
	c.path.count(func(s *Stats) { s.Fragmentable++ })
	if c.setDF == nil {
		_, err := c.Conn.Write(p)
		if isTooBig(err) {
			return nil
		}
		return err
	}
	if err := c.setDF(false); err != nil {
		return err
	}
	_, err := c.Conn.Write(p)
	if derr := c.setDF(true); err == nil {
		err = derr
	}
	if isTooBig(err) {
		return nil
	}
	return err
}

// Read returns the next SCTP packet for the stack above. It absorbs the
// EMSGSIZE a connected socket reports after an ICMP "fragmentation
// needed", and consumes the HEARTBEAT ACKs of probes.
func (c *Conn) Read(b []byte) (int, error) {
	for {
		n, err := c.Conn.Read(b)
		if err != nil {
			if isTooBig(err) {
				c.mu.Lock()
				c.tooBigLocked()
				c.mu.Unlock()
				continue
			}
			return n, err
		}
		if c.consumeProbeAck(b[:n]) {
			continue
		}
		return n, nil
	}
}

func (c *Conn) consumeProbeAck(p []byte) bool {
	if len(p) < wire.HeaderLen+probeChunkMin || wire.ChunkType(p[wire.HeaderLen]) != wire.ChunkHeartbeatAck {
		return false
	}
	hb, _, err := parseHeartbeatProbe(p[wire.HeaderLen:])
	if err != nil || !hb.Ack {
		return false
	}
	if !wire.ChecksumOK(p) || hb.Size != len(p) {
		return true // ours, but damaged: drop it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Probe sizes are rounded down to whole 4-octet SCTP words.
	hdrs := pmtu.UDPHeaderLen + pmtu.IPHeaderLen(c.ipv6)
	size := c.prober.Probing()
	if size == 0 || (size-hdrs)&^3 != hb.Size {
		return true
	}
	c.path.count(func(s *Stats) { s.ProbesAcked++ })
	c.prober.Acked(size, time.Now())
	c.syncLocked(SourceProbe)
	c.poke()
	return true
}

// Stats returns the path statistics with the probes lost so far.
func (c *Conn) Stats() Stats {
	s := c.path.Stats()
	c.mu.Lock()
	s.ProbesLost = c.prober.Lost()
	c.mu.Unlock()
	return s
}
