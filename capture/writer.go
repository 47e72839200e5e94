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

// bufferSize is the file buffer: the recorder's memory bound.
const bufferSize = 1 << 20

// ErrClosed is returned by WriteFrame after Close.
var ErrClosed = errors.New("capture: writer closed")

// Stats count what a Writer recorded.
type Stats struct {
	// Packets and Octets count the packets written (headers included).
	Packets, Octets uint64
	// Dropped counts packets not written: after Close or a write error.
	Dropped uint64
}

// Writer records packets to one pcapng file with one interface of link
// type RAW (IPv4 and IPv6 packets). It is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	ng      *pcapgo.NgWriter
	bw      *bufio.Writer
	closer  io.Closer
	closed  bool
	err     error
	scratch []byte // headers of the packet being recorded (under mu)
	joined  []byte // a packet in one piece for pcapgo (under mu)
	comment string // a comment for the next packet written (under mu)

	packets, octets, dropped atomic.Uint64
}

// Create creates (or truncates) the file at path and returns a Writer
// recording IP packets to it.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	w, err := newWriter(f, layers.LinkTypeRaw)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	w.closer = f
	return w, nil
}

// NewWriter returns a Writer recording IP packets to w.
func NewWriter(w io.Writer) (*Writer, error) { return newWriter(w, layers.LinkTypeRaw) }

// NewFrameWriter returns a Writer of frames of the given pcap link type
// (LINKTYPE_ETHERNET is 1), written with WriteFrame.
func NewFrameWriter(w io.Writer, linkType uint16) (*Writer, error) {
	return newWriter(w, layers.LinkType(linkType))
}

func newWriter(w io.Writer, lt layers.LinkType) (*Writer, error) {
	bw := bufio.NewWriterSize(w, bufferSize)
	intf := pcapgo.NgInterface{Name: "sctp-rdma", Description: "packets of one sctp-rdma process", LinkType: lt, SnapLength: 0}
	ng, err := pcapgo.NewNgWriterInterface(bw, intf, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "sctp-rdma"}})
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	return &Writer{ng: ng, bw: bw, scratch: make([]byte, 0, ipv6HeaderLen+tcpHeaderLen)}, nil
}

// Stats returns the counters.
func (w *Writer) Stats() Stats {
	return Stats{Packets: w.packets.Load(), Octets: w.octets.Load(), Dropped: w.dropped.Load()}
}

// Flush writes the buffered packets to the file.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	if err := w.ng.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

// Close flushes and closes the file (if the Writer created it). Later
// records are dropped and counted.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if err := w.ng.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	if w.closer != nil {
		if err := w.closer.Close(); err != nil && w.err == nil {
			w.err = err
		}
	}
	return w.err
}

// WriteFrame records one frame of the Writer's link type.
func (w *Writer) WriteFrame(ts time.Time, frame []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.dropped.Add(1)
		return ErrClosed
	}
	return w.writeLocked(ts, frame, nil)
}

// writeLocked writes one packet made of hdr and payload; w.mu is held.
func (w *Writer) writeLocked(ts time.Time, hdr, payload []byte) error {
	if w.closed || w.err != nil {
		w.dropped.Add(1)
		return w.err
	}
	n := len(hdr) + len(payload)
	ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: n, Length: n}
	var err error
	if len(payload) == 0 {
		err = w.ng.WritePacket(ci, hdr)
	} else {
		err = w.writeTwo(ci, hdr, payload)
	}
	if err != nil {
		w.err = err
		w.dropped.Add(1)
		return err
	}
	w.packets.Add(1)
	w.octets.Add(uint64(n))
	return nil
}

// writeTwo writes a packet given in two parts without joining them:
// pcapgo takes one slice, so the headers go through a small pending
// buffer that pcapgo's block writer sees as one packet.
func (w *Writer) writeTwo(ci gopacket.CaptureInfo, hdr, payload []byte) error {
	if cap(w.joined) < len(hdr)+len(payload) {
		w.joined = make([]byte, 0, max(len(hdr)+len(payload), 2*cap(w.joined)))
	}
	b := append(append(w.joined[:0], hdr...), payload...)
	w.joined = b
	if w.comment != "" {
		return w.ng.WritePacketWithOptions(ci, b, pcapgo.NgPacketOptions{Comments: []string{w.comment}})
	}
	return w.ng.WritePacket(ci, b)
}

// recordUDP records one UDP datagram from src to dst.
func (w *Writer) recordUDP(src, dst netip.AddrPort, payload []byte) {
	w.recordUDPNote(src, dst, payload, nil, "")
}

// recordUDPNote is recordUDP; the first record for which *noted is false
// carries note as a pcapng packet comment (w.mu guards *noted).
func (w *Writer) recordUDPNote(src, dst netip.AddrPort, payload []byte, noted *bool, note string) {
	if len(payload) > maxIPPayload-udpHeaderLen {
		payload = payload[:maxIPPayload-udpHeaderLen]
	}
	now := time.Now()
	w.mu.Lock()
	b := appendIP(w.scratch[:0], src.Addr(), dst.Addr(), protoUDP, udpHeaderLen+len(payload))
	b = appendUDP(b, src, dst, payload)
	if note != "" && !*noted {
		*noted = true
		w.comment = note
	}
	_ = w.writeLocked(now, b, payload)
	w.comment = ""
	w.mu.Unlock()
}

// recordTCP records one TCP segment from src to dst.
func (w *Writer) recordTCP(src, dst netip.AddrPort, seq, ack uint32, flags uint8, payload []byte) {
	now := time.Now()
	w.mu.Lock()
	b := appendIP(w.scratch[:0], src.Addr(), dst.Addr(), protoTCP, tcpHeaderLen+len(payload))
	b = appendTCP(b, src, dst, seq, ack, flags, payload)
	_ = w.writeLocked(now, b, payload)
	w.mu.Unlock()
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
