package capture

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// bufferSize is the file buffer of the goroutine that writes the file.
const bufferSize = 1 << 20

// defaultMaxQueued is Options.MaxQueued's default.
const defaultMaxQueued = 32 << 20

// queueSlots bounds the packets waiting for the file. Each record's
// buffer grows to the largest packet it carried (at most 64 KiB), so the
// records' memory stays within queueSlots+1 times 64 KiB, about 32 MiB.
const queueSlots = 512

// errClosed: a record after Close (dropped and counted).
var errClosed = errors.New("capture: writer closed")

// errQueueFull: a record did not fit in Options.MaxQueued.
var errQueueFull = errors.New("capture: queue full, record dropped")

// Options tune a Writer. Zero values take defaults.
type Options struct {
	// SnapLen, if positive, keeps at most this many octets of each packet
	// (headers included), as tcpdump -s does: the file then records each
	// packet's original length, and checksums over truncated payloads
	// are written as 0 (Wireshark does not verify them by default).
	SnapLen int
	// MaxQueued bounds the octets of packet data waiting for the file
	// (default defaultMaxQueued, 32 MiB; and at most 512 packets). The
	// data path never waits for the file: a packet that does not fit is
	// dropped and counted, like a kernel capture buffer that overflows.
	MaxQueued int
}

// Stats count what a Writer recorded.
type Stats struct {
	// Packets and Octets count the packets written (headers included,
	// as captured).
	Packets, Octets uint64
	// Dropped counts packets not written: the queue was full (the file
	// could not keep up), after Close, or after a write error.
	Dropped uint64
}

// Record kinds.
const (
	recUDP   = iota // IP/UDP header built by the file goroutine
	recTCP          // IP/TCP header built by the file goroutine
	recIP           // IP header built by the file goroutine, payload complete (SCTP)
	recFlush        // Flush marker
)

// record is one packet waiting for the file.
type record struct {
	ts       time.Time
	kind     uint8
	proto    uint8
	flags    uint8
	src, dst netip.AddrPort
	seq, ack uint32
	comment  string
	data     []byte // payload (truncated to the snap length)
	origLen  int    // payload length on the wire
	done     chan error
}

// Writer records packets to one pcapng file with one interface (link type
// RAW: IPv4 and IPv6 packets). It is safe for concurrent use. Recording
// copies the packet into a queue and returns; one goroutine builds the
// headers (checksums included) and writes the file.
type Writer struct {
	opts Options

	// gate: recorders hold it shared while they queue, Close exclusively,
	// so that nothing is queued after the file goroutine's final drain.
	gate   sync.RWMutex
	closed bool

	queue  chan *record
	free   chan *record
	queued atomic.Int64
	stop   chan struct{}
	done   chan struct{}

	// Owned by the file goroutine.
	ng      *pcapgo.NgWriter
	closer  io.Closer
	err     error
	scratch []byte
	joined  []byte

	packets, octets, dropped atomic.Uint64
	errv                     atomic.Pointer[error]
}

// create creates (or truncates) the file at path and returns a Writer
// recording IP packets to it.
func create(path string) (*Writer, error) { return CreateWith(path, Options{}) }

// CreateWith is Create with options.
func CreateWith(path string, opts Options) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	w, err := newWriter(f, opts, f)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return w, nil
}

// NewWriter returns a Writer recording IP packets to w.
func NewWriter(w io.Writer) (*Writer, error) { return newWriter(w, Options{}, nil) }

func newWriter(w io.Writer, opts Options, closer io.Closer) (*Writer, error) {
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = defaultMaxQueued
	}
	bw := bufio.NewWriterSize(w, bufferSize)
	intf := pcapgo.NgInterface{Name: "sctp-rdma", Description: "packets of one sctp-rdma process", LinkType: layers.LinkTypeRaw,
		SnapLength: uint32(max(opts.SnapLen, 0))}
	ng, err := pcapgo.NewNgWriterInterface(bw, intf, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "sctp-rdma"}})
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	wr := &Writer{opts: opts, ng: ng, closer: closer,
		queue: make(chan *record, queueSlots), free: make(chan *record, queueSlots+1),
		stop: make(chan struct{}), done: make(chan struct{}),
		scratch: make([]byte, 0, ipv6HeaderLen+tcpHeaderLen)}
	// Every record that can be in circulation (queued or being written)
	// exists from the start: recording never allocates a record, and a
	// record's buffer grows to the largest packet once.
	for range queueSlots + 1 {
		wr.free <- &record{}
	}
	go wr.run()
	return wr, nil
}

// Stats returns the counters.
func (w *Writer) Stats() Stats {
	return Stats{Packets: w.packets.Load(), Octets: w.octets.Load(), Dropped: w.dropped.Load()}
}

// Flush waits until every packet recorded before it is in the file.
func (w *Writer) Flush() error {
	done := make(chan error, 1)
	w.gate.RLock()
	if w.closed {
		w.gate.RUnlock()
		return w.firstErr()
	}
	w.queue <- &record{kind: recFlush, done: done}
	w.gate.RUnlock()
	return <-done
}

// Close writes what is queued, flushes and closes the file (if the
// Writer created it). Later records are dropped and counted.
func (w *Writer) Close() error {
	w.gate.Lock()
	if w.closed {
		w.gate.Unlock()
		<-w.done
		return w.firstErr()
	}
	w.closed = true
	w.gate.Unlock()
	close(w.stop)
	<-w.done
	return w.firstErr()
}

func (w *Writer) firstErr() error {
	if p := w.errv.Load(); p != nil {
		return *p
	}
	return nil
}

// enqueue copies one packet into the queue; hdrLen is the length of the
// headers the file goroutine adds (for the snap length).
func (w *Writer) enqueue(ts time.Time, kind, proto uint8, src, dst netip.AddrPort, seq, ack uint32, flags uint8,
	comment string, payload []byte, hdrLen int) error {
	n := len(payload)
	if s := w.opts.SnapLen; s > 0 && hdrLen+n > s {
		n = max(s-hdrLen, 0)
	}
	w.gate.RLock()
	defer w.gate.RUnlock()
	if w.closed {
		w.dropped.Add(1)
		return errClosed
	}
	if w.queued.Add(int64(n)) > int64(w.opts.MaxQueued) {
		w.queued.Add(-int64(n))
		w.dropped.Add(1)
		return errQueueFull
	}
	var r *record
	select {
	case r = <-w.free:
	default:
		// Every record is queued or being written: the queue is full.
		w.queued.Add(-int64(n))
		w.dropped.Add(1)
		return errQueueFull
	}
	*r = record{ts: ts, kind: kind, proto: proto, flags: flags, src: src, dst: dst, seq: seq, ack: ack,
		comment: comment, data: append(r.data[:0], payload[:n]...), origLen: len(payload)}
	select {
	case w.queue <- r:
		return nil
	default:
		w.queued.Add(-int64(n))
		w.dropped.Add(1)
		w.recycle(r)
		return errQueueFull
	}
}

// recycle returns r to the free list.
func (w *Writer) recycle(r *record) {
	if cap(r.data) > 1<<20 {
		r.data = nil // do not keep a rare huge buffer
	}
	select {
	case w.free <- r:
	default:
	}
}

// run is the file goroutine.
func (w *Writer) run() {
	defer close(w.done)
	for {
		select {
		case r := <-w.queue:
			w.handle(r)
		case <-w.stop:
			for {
				select {
				case r := <-w.queue:
					w.handle(r)
					continue
				default:
				}
				break
			}
			w.setErr(w.ng.Flush())
			if w.closer != nil {
				w.setErr(w.closer.Close())
			}
			return
		}
	}
}

func (w *Writer) setErr(err error) {
	if err != nil && w.err == nil {
		w.err = err
		w.errv.Store(&err)
	}
}

// handle writes one record.
func (w *Writer) handle(r *record) {
	if r.kind == recFlush {
		w.setErr(w.ng.Flush())
		r.done <- w.err
		return
	}
	w.queued.Add(-int64(len(r.data)))
	defer w.recycle(r)
	if w.err != nil {
		w.dropped.Add(1)
		return
	}
	full := len(r.data) == r.origLen
	var hdr []byte
	switch r.kind {
	case recUDP:
		hdr = appendIP(w.scratch[:0], r.src.Addr(), r.dst.Addr(), protoUDP, udpHeaderLen+r.origLen)
		hdr = appendUDP(hdr, r.src, r.dst, r.data, r.origLen, full)
	case recTCP:
		hdr = appendIP(w.scratch[:0], r.src.Addr(), r.dst.Addr(), protoTCP, tcpHeaderLen+r.origLen)
		hdr = appendTCP(hdr, r.src, r.dst, r.seq, r.ack, r.flags, r.data, r.origLen, full)
	case recIP:
		hdr = appendIP(w.scratch[:0], r.src.Addr(), r.dst.Addr(), r.proto, r.origLen)
	}
	w.scratch = hdr[:0]
	capLen := len(hdr) + len(r.data)
	ci := gopacket.CaptureInfo{Timestamp: r.ts, CaptureLength: capLen, Length: len(hdr) + r.origLen}
	b := r.data
	if len(hdr) > 0 {
		b = append(append(w.joined[:0], hdr...), r.data...)
		w.joined = b[:0]
	}
	var err error
	if r.comment != "" {
		err = w.ng.WritePacketWithOptions(ci, b, pcapgo.NgPacketOptions{Comments: []string{r.comment}})
	} else {
		err = w.ng.WritePacket(ci, b)
	}
	if err != nil {
		w.setErr(err)
		w.dropped.Add(1)
		return
	}
	w.packets.Add(1)
	w.octets.Add(uint64(capLen))
}

// recordUDP records one UDP datagram from src to dst.
func (w *Writer) recordUDP(src, dst netip.AddrPort, payload []byte) {
	w.recordUDPNote(src, dst, payload, "")
}

// recordUDPNote is recordUDP with a pcapng packet comment.
func (w *Writer) recordUDPNote(src, dst netip.AddrPort, payload []byte, note string) {
	if len(payload) > maxIPPayload-udpHeaderLen {
		payload = payload[:maxIPPayload-udpHeaderLen]
	}
	_ = w.enqueue(time.Now(), recUDP, protoUDP, src, dst, 0, 0, 0, note, payload, ipHeaderLen(src.Addr(), dst.Addr())+udpHeaderLen)
}

// recordTCP records one TCP segment from src to dst.
func (w *Writer) recordTCP(src, dst netip.AddrPort, seq, ack uint32, flags uint8, payload []byte) {
	_ = w.enqueue(time.Now(), recTCP, protoTCP, src, dst, seq, ack, flags, "", payload, ipHeaderLen(src.Addr(), dst.Addr())+tcpHeaderLen)
}

// recordIP records an IP packet whose payload (of protocol proto) is
// complete, for example an SCTP packet with its CRC32c.
func (w *Writer) recordIP(src, dst netip.AddrPort, proto uint8, payload []byte) {
	_ = w.enqueue(time.Now(), recIP, proto, src, dst, 0, 0, 0, "", payload, ipHeaderLen(src.Addr(), dst.Addr()))
}

func ipHeaderLen(src, dst netip.Addr) int {
	if src.Is4() && dst.Is4() {
		return ipv4HeaderLen
	}
	return ipv6HeaderLen
}

// addrPort converts a socket address; an unspecified local address takes
// the loopback address if the peer is on loopback, else the peer's
// family's unspecified address.
func addrPort(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch v := a.(type) {
	case *net.UDPAddr:
		ap = v.AddrPort()
	case *net.TCPAddr:
		ap = v.AddrPort()
	default:
		if a != nil {
			ap, _ = netip.ParseAddrPort(a.String())
		}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// endpoints returns the addresses to write for a local and a remote
// socket address, both of the same family.
func endpoints(local, remote netip.AddrPort) (netip.AddrPort, netip.AddrPort) {
	r := remote.Addr()
	if !r.IsValid() {
		r = netip.IPv4Unspecified()
	}
	l := local.Addr()
	if !l.IsValid() || l.IsUnspecified() || l.Is4() != r.Is4() {
		switch {
		case r.IsLoopback():
			l = r
		case r.Is4():
			l = netip.IPv4Unspecified()
		default:
			l = netip.IPv6Unspecified()
		}
	}
	return netip.AddrPortFrom(l, local.Port()), netip.AddrPortFrom(r, remote.Port())
}
