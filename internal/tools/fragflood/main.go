//go:build linux

// Command fragflood measures what a peer that completed the handshake can
// make a running `sctp-rdma serve` (sctp-native) spend on reassembly: it
// sets up a real association (INIT, COOKIE ECHO) and sends -n DATA
// fragments of -size octets in -shape, packed into packets of up to
// -packet octets. It reports the server's CPU seconds (utime+stime of
// /proc/<pid>/stat) and resident memory growth (VmRSS, peak and after)
// until the server is idle again, whether and when it aborted the
// association, and the HEARTBEAT round trips of a second association
// probed every -probe-every during the flood (docs/security.md).
package main

//	sctp-rdma serve --listen 127.0.0.1:18515 &
//	go run ./internal/tools/fragflood -addr 127.0.0.1:18515 -pid $! -n 200000 -size 1
//
// Shapes: middle (one message, no fragment with a B or an E bit), begin
// (one message: a B fragment, then middles, never an E), sparse (every
// other TSN, middles: held out of order), gaps (messages of -msg-frags
// fragments, a B and middles, one TSN left out after each: none ever
// completes, none is provably dead).

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

func procStatus(pid int, key string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

// cpuTicks is utime+stime of pid, in clock ticks (USER_HZ, 100 on Linux).
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name (field 2) may hold spaces: fields after its ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return -1
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

const userHZ = 100

// assoc is one raw association to the server.
type assoc struct {
	c                 *net.UDPConn
	peerTag, localTag uint32
	tsn               uint32
	aborted           atomic.Value // string: the ABORT's causes
	abortAt           atomic.Int64 // unix ns
	lastARwnd         atomic.Uint32
	lastCum           atomic.Uint32
	sacks             atomic.Uint64
}

func header(tag uint32) []byte {
	return wire.AppendHeader(nil, wire.Header{SrcPort: 5000, DstPort: 5000, VerificationTag: tag})
}

func send(c *net.UDPConn, p []byte) error {
	wire.SetChecksum(p)
	_, err := c.Write(p)
	return err
}

// handshake sets up an association from a fresh socket (RFC 9260 §5.1).
func handshake(to netip.AddrPort, localTag uint32) (*assoc, error) {
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		return nil, err
	}
	_ = c.SetReadBuffer(4 << 20)
	in := wire.Init{InitiateTag: localTag, ARwnd: 4 << 20, OutboundStreams: 16, InboundStreams: 16, InitialTSN: 1000}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	if err := send(c, in.Append(header(0))); err != nil {
		return nil, err
	}
	buf := make([]byte, 1<<16)
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	var ack wire.Init
	for {
		n, err := c.Read(buf)
		if err != nil {
			return nil, fmt.Errorf("waiting for INIT ACK: %w", err)
		}
		p, err := wire.ParsePacket(buf[:n])
		if err != nil {
			continue
		}
		it := p.Chunks()
		if ch, ok := it.Next(); ok && ch.Type == wire.ChunkInitAck {
			if ack, err = wire.ParseInit(ch); err != nil {
				return nil, err
			}
			break
		}
	}
	ce := wire.CookieEcho{Cookie: ack.Params.StateCookie}
	if err := send(c, ce.Append(header(ack.InitiateTag))); err != nil {
		return nil, err
	}
	for {
		n, err := c.Read(buf)
		if err != nil {
			return nil, fmt.Errorf("waiting for COOKIE ACK: %w", err)
		}
		p, err := wire.ParsePacket(buf[:n])
		if err != nil {
			continue
		}
		it := p.Chunks()
		if ch, ok := it.Next(); ok && ch.Type == wire.ChunkCookieAck {
			break
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	return &assoc{c: c, peerTag: ack.InitiateTag, localTag: localTag, tsn: 1000}, nil
}

// readLoop takes the server's packets: SACKs are counted, an ABORT noted,
// HEARTBEATs answered, HEARTBEAT ACKs handed to hbAck.
func (a *assoc) readLoop(hbAck func(info []byte)) {
	buf := make([]byte, 1<<16)
	for {
		n, err := a.c.Read(buf)
		if err != nil {
			return
		}
		p, err := wire.ParsePacket(buf[:n])
		if err != nil {
			continue
		}
		it := p.Chunks()
		for ch, ok := it.Next(); ok; ch, ok = it.Next() {
			switch ch.Type {
			case wire.ChunkSACK:
				if s, err := wire.ParseSACK(ch, nil, nil); err == nil {
					a.sacks.Add(1)
					a.lastARwnd.Store(s.ARwnd)
					a.lastCum.Store(s.CumTSNAck)
				}
			case wire.ChunkAbort:
				ab, _ := wire.ParseAbort(ch)
				if a.aborted.Load() == nil {
					a.abortAt.Store(time.Now().UnixNano())
					a.aborted.Store(describe(ab.Causes))
				}
			case wire.ChunkHeartbeat:
				if hb, err := wire.ParseHeartbeat(ch); err == nil {
					r := wire.Heartbeat{Ack: true, Info: hb.Info}
					_ = send(a.c, r.Append(header(a.peerTag)))
				}
			case wire.ChunkHeartbeatAck:
				if hb, err := wire.ParseHeartbeat(ch); err == nil && hbAck != nil {
					hbAck(hb.Info)
				}
			}
		}
	}
}

func describe(causes []byte) string {
	it := wire.NewCauseIter(causes)
	var s []string
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		x := c.Code.String()
		if c.Code == wire.CauseProtocolViolation || c.Code == wire.CauseUserInitiatedAbort {
			x += ": " + string(c.Info)
		}
		s = append(s, x)
	}
	return strings.Join(s, "; ")
}

// probe sends a HEARTBEAT every `every` and records the round trips.
type probe struct {
	mu    sync.Mutex
	rtts  []time.Duration
	sent  atomic.Int64
	out   map[uint64]time.Time
	worst time.Duration // including unanswered ones, at the end
}

func (p *probe) run(a *assoc, every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	var nonce uint64
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		nonce++
		info := binary.BigEndian.AppendUint64(nil, nonce)
		p.mu.Lock()
		p.out[nonce] = time.Now()
		p.mu.Unlock()
		p.sent.Add(1)
		hb := wire.Heartbeat{Info: info}
		_ = send(a.c, hb.Append(header(a.peerTag)))
	}
}

func (p *probe) ack(info []byte) {
	if len(info) != 8 {
		return
	}
	n := binary.BigEndian.Uint64(info)
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.out[n]; ok {
		p.rtts = append(p.rtts, time.Since(t))
		delete(p.out, n)
	}
}

func (p *probe) report() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	unanswered := len(p.out)
	var oldest time.Duration
	for _, t := range p.out {
		oldest = max(oldest, time.Since(t))
	}
	r := slices.Clone(p.rtts)
	slices.Sort(r)
	if len(r) == 0 {
		return fmt.Sprintf("%d HEARTBEATs, none answered", p.sent.Load())
	}
	q := func(f float64) time.Duration { return r[min(int(f*float64(len(r))), len(r)-1)] }
	return fmt.Sprintf("%d HEARTBEATs, %d answered: median %v, p99 %v, max %v; %d unanswered (oldest %v)",
		p.sent.Load(), len(r), q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond),
		r[len(r)-1].Round(time.Microsecond), unanswered, oldest.Round(time.Millisecond))
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18515", "the server's UDP address")
	pid := flag.Int("pid", 0, "the server's process id (for CPU time and VmRSS)")
	n := flag.Int("n", 200000, "fragments to send")
	size := flag.Int("size", 1, "user data octets per fragment")
	shape := flag.String("shape", "middle", "middle, begin, sparse or gaps (see the package comment)")
	msgFrags := flag.Int("msg-frags", 100, "fragments per message of the gaps shape")
	packet := flag.Int("packet", 60000, "largest SCTP packet sent, octets")
	probeEvery := flag.Duration("probe-every", 10*time.Millisecond, "HEARTBEAT interval of the probe association (0: no probe)")
	idle := flag.Duration("idle", time.Second, "the server is idle once its CPU time has not grown for this long")
	settle := flag.Duration("settle", 60*time.Second, "the longest wait for the server to become idle")
	flag.Parse()
	if err := run(*addr, *pid, *n, *size, *shape, max(*msgFrags, 1), *packet, *probeEvery, *idle, *settle); err != nil {
		fmt.Fprintln(os.Stderr, "fragflood:", err)
		os.Exit(1)
	}
}

func run(addr string, pid, n, size int, shape string, msgFrags, packet int, probeEvery, idle, settle time.Duration) error {
	to, err := netip.ParseAddrPort(addr)
	if err != nil {
		return err
	}
	if pid <= 0 || cpuTicks(pid) < 0 {
		return errors.New("-pid: the server's process id is needed")
	}
	switch shape {
	case "middle", "begin", "sparse", "gaps":
	default:
		return fmt.Errorf("-shape %q: want middle, begin, sparse or gaps", shape)
	}
	flood, err := handshake(to, 0x0f1a0001)
	if err != nil {
		return fmt.Errorf("flooding association: %w", err)
	}
	go flood.readLoop(nil)
	var pr *probe
	var pa *assoc
	stopProbe := make(chan struct{})
	if probeEvery > 0 {
		pa, err = handshake(to, 0x0f1a0002)
		if err != nil {
			return fmt.Errorf("probe association: %w", err)
		}
		pr = &probe{out: map[uint64]time.Time{}}
		go pa.readLoop(pr.ack)
		go pr.run(pa, probeEvery, stopProbe)
		time.Sleep(200 * time.Millisecond) // a few round trips before the flood
	}

	cpu0, rss0 := cpuTicks(pid), procStatus(pid, "VmRSS")
	var peak atomic.Int64
	peak.Store(rss0)
	stopRSS := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopRSS:
				return
			case <-t.C:
				if r := procStatus(pid, "VmRSS"); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()

	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i)
	}
	p := header(flood.peerTag)
	packets, sentOctets := 0, 0
	began := time.Now()
	tsn := flood.tsn
	for i := 0; i < n; i++ {
		d := wire.Data{TSN: tsn, StreamID: 1, PPID: 16, Unordered: true, UserData: data}
		if shape == "begin" && i == 0 || shape == "gaps" && i%msgFrags == 0 {
			d.Beginning = true
		}
		tsn++
		if shape == "sparse" || shape == "gaps" && i%msgFrags == msgFrags-1 {
			tsn++ // the TSN between stays missing
		}
		if len(p)+d.Len() > packet {
			if err := send(flood.c, p); err != nil {
				return err
			}
			packets++
			sentOctets += len(p)
			p = header(flood.peerTag)
			time.Sleep(time.Millisecond) // the server's socket buffer keeps up
		}
		p = d.Append(p)
	}
	if len(p) > wire.HeaderLen {
		if err := send(flood.c, p); err != nil {
			return err
		}
		packets++
		sentOctets += len(p)
	}
	sendTime := time.Since(began)

	// Wait until the server is idle: over the last `idle` it used at most
	// a tenth of a core (the probe's HEARTBEATs cost a little).
	type sample struct {
		at    time.Time
		ticks int64
	}
	hist := []sample{{time.Now(), cpuTicks(pid)}}
	busy := time.Duration(0)
	for time.Since(began) < settle {
		time.Sleep(50 * time.Millisecond)
		s := sample{time.Now(), cpuTicks(pid)}
		hist = append(hist, s)
		if hist[0].at.After(s.at.Add(-idle)) {
			continue
		}
		for len(hist) > 2 && !hist[1].at.After(s.at.Add(-idle)) {
			hist = hist[1:]
		}
		if float64(s.ticks-hist[0].ticks) <= idle.Seconds()*userHZ/10 {
			busy = hist[0].at.Sub(began)
			break
		}
	}
	close(stopProbe)
	time.Sleep(100 * time.Millisecond) // the last probes' answers
	close(stopRSS)
	cpu1, rss1 := cpuTicks(pid), procStatus(pid, "VmRSS")
	cpu := float64(cpu1-cpu0) / userHZ
	mb := float64(sentOctets) / 1e6

	fmt.Printf("fragflood: %d fragments of %d octets (%s), %d packets, %.2f MB sent in %v\n",
		n, size, shape, packets, mb, sendTime.Round(time.Millisecond))
	fmt.Printf("server: %.2f s CPU (%.3f s per MB), busy %v; VmRSS %d KiB before, peak %+d KiB, %+d KiB at the end (%.0f KiB per MB at the peak)\n",
		cpu, cpu/mb, busy.Round(time.Millisecond), rss0, peak.Load()-rss0, rss1-rss0, float64(peak.Load()-rss0)/mb)
	fmt.Printf("server: %d SACKs, last a_rwnd %d, last Cumulative TSN Ack %d (%d fragments acknowledged cumulatively)\n",
		flood.sacks.Load(), flood.lastARwnd.Load(), flood.lastCum.Load(), int32(flood.lastCum.Load()-flood.tsn+1))
	if why, ok := flood.aborted.Load().(string); ok {
		fmt.Printf("server: ABORT after %v: %s\n", time.Unix(0, flood.abortAt.Load()).Sub(began).Round(time.Millisecond), why)
	} else {
		fmt.Println("server: no ABORT")
	}
	if pr != nil {
		fmt.Printf("probe: %s\n", pr.report())
		if why, ok := pa.aborted.Load().(string); ok {
			fmt.Printf("probe: its association was aborted after %v: %s\n", time.Unix(0, pa.abortAt.Load()).Sub(began).Round(time.Millisecond), why)
		}
	}
	// End the flooding association (the probe's ends with its socket and
	// the server's idle timeout).
	ab := wire.Abort{}
	_ = send(flood.c, ab.Append(header(flood.peerTag)))
	return nil
}
