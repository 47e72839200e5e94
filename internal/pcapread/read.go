// Package pcapread reads pcap and pcapng files back into IP packets and
// TCP byte streams, for tests that check what package capture, tcpdump or
// a peer recorded.
package pcapread

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// IP protocol numbers and TCP flags of Packet.
const (
	protoTCP  = 6
	protoSCTP = 132
	tcpFIN    = 0x01
	tcpSYN    = 0x02
	tcpPSH    = 0x08
	tcpACK    = 0x10
)

// Packet is one IP packet read from a capture.
type Packet struct {
	Time time.Time
	// Proto is the IP protocol (6 TCP, 17 UDP, 132 SCTP).
	Proto uint8
	// Src and Dst are the transport addresses.
	Src, Dst netip.AddrPort
	// TCP fields, for Proto 6.
	Seq, Ack uint32
	Flags    uint8
	// Payload is what follows the UDP or TCP header, or the whole SCTP
	// packet (common header included) for Proto 132.
	Payload []byte
}

// TCPFlow names one direction of a TCP connection.
type TCPFlow struct{ Src, Dst netip.AddrPort }

// ReadPackets reads every IP packet (over Ethernet, Linux cooked or raw
// IP link types) of a pcap or pcapng file. Packets that are not IPv4 or
// IPv6 carrying TCP, UDP or SCTP are skipped.
func ReadPackets(path string) ([]Packet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pcapread: %w", err)
	}
	defer f.Close()
	return Read(f)
}

type packetSource interface {
	ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	LinkType() layers.LinkType
}

// Read is ReadPackets from r.
func Read(r io.Reader) ([]Packet, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("pcapread: not a capture file: %w", err)
	}
	var src packetSource
	if bytes.Equal(magic, []byte{0x0a, 0x0d, 0x0d, 0x0a}) {
		src, err = pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
	} else {
		src, err = pcapgo.NewReader(br)
	}
	if err != nil {
		return nil, fmt.Errorf("pcapread: %w", err)
	}
	var out []Packet
	for {
		data, ci, err := src.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("pcapread: packet %d: %w", len(out)+1, err)
		}
		if p, ok := decode(data, src.LinkType()); ok {
			p.Time = ci.Timestamp
			out = append(out, p)
		}
	}
}

func decode(data []byte, lt layers.LinkType) (Packet, bool) {
	var p Packet
	pkt := gopacket.NewPacket(data, lt, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
	var src, dst netip.Addr
	switch ip := pkt.NetworkLayer().(type) {
	case *layers.IPv4:
		src, _ = netip.AddrFromSlice(ip.SrcIP.To4())
		dst, _ = netip.AddrFromSlice(ip.DstIP.To4())
		p.Proto = uint8(ip.Protocol)
		if p.Proto == protoSCTP {
			p.Payload = ip.Payload
		}
	case *layers.IPv6:
		src, _ = netip.AddrFromSlice(ip.SrcIP)
		dst, _ = netip.AddrFromSlice(ip.DstIP)
		p.Proto = uint8(ip.NextHeader)
		if p.Proto == protoSCTP {
			p.Payload = ip.Payload
		}
	default:
		return p, false
	}
	switch t := pkt.TransportLayer().(type) {
	case *layers.TCP:
		p.Src, p.Dst = netip.AddrPortFrom(src, uint16(t.SrcPort)), netip.AddrPortFrom(dst, uint16(t.DstPort))
		p.Seq, p.Ack, p.Payload = t.Seq, t.Ack, t.Payload
		if t.FIN {
			p.Flags |= tcpFIN
		}
		if t.SYN {
			p.Flags |= tcpSYN
		}
		if t.ACK {
			p.Flags |= tcpACK
		}
		if t.PSH {
			p.Flags |= tcpPSH
		}
	case *layers.UDP:
		p.Src, p.Dst = netip.AddrPortFrom(src, uint16(t.SrcPort)), netip.AddrPortFrom(dst, uint16(t.DstPort))
		p.Payload = t.Payload
	default:
		if p.Proto != protoSCTP || len(p.Payload) < 4 {
			return p, false
		}
		sp := uint16(p.Payload[0])<<8 | uint16(p.Payload[1])
		dp := uint16(p.Payload[2])<<8 | uint16(p.Payload[3])
		p.Src, p.Dst = netip.AddrPortFrom(src, sp), netip.AddrPortFrom(dst, dp)
	}
	return p, true
}

// ReadTCPStreams returns the payload of each TCP direction of a capture,
// reassembled by sequence number: retransmitted and overlapping octets are
// taken once, a gap ends the direction's stream.
func ReadTCPStreams(path string) (map[TCPFlow][]byte, error) {
	pkts, err := ReadPackets(path)
	if err != nil {
		return nil, err
	}
	return TCPStreams(pkts), nil
}

// TCPStreams reassembles the TCP directions of pkts (see ReadTCPStreams).
func TCPStreams(pkts []Packet) map[TCPFlow][]byte {
	type seg struct {
		seq  uint32
		data []byte
	}
	segs := map[TCPFlow][]seg{}
	isn := map[TCPFlow]uint32{}
	for _, p := range pkts {
		if p.Proto != protoTCP {
			continue
		}
		fl := TCPFlow{p.Src, p.Dst}
		if p.Flags&tcpSYN != 0 {
			isn[fl] = p.Seq + 1
		}
		if len(p.Payload) > 0 {
			segs[fl] = append(segs[fl], seg{p.Seq, p.Payload})
		}
	}
	out := map[TCPFlow][]byte{}
	for fl, ss := range segs {
		next, ok := isn[fl]
		if !ok {
			next = ss[0].seq
			for _, s := range ss {
				if int32(s.seq-next) < 0 {
					next = s.seq
				}
			}
		}
		sort.SliceStable(ss, func(i, j int) bool { return int32(ss[i].seq-next) < int32(ss[j].seq-next) })
		var b []byte
		for _, s := range ss {
			d := int32(s.seq - next)
			if d > 0 {
				break // a gap: what follows was not captured
			}
			if skip := int(-d); skip < len(s.data) {
				b = append(b, s.data[skip:]...)
				next += uint32(len(s.data) - skip)
			}
		}
		out[fl] = b
	}
	return out
}
