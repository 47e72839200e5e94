package capture

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
)

// IP protocol numbers.
const (
	protoTCP  = 6
	protoUDP  = 17
	protoSCTP = 132
)

// TCP flags (RFC 9293 §3.1).
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpPSH = 0x08
	tcpACK = 0x10
)

const (
	ipv4HeaderLen = 20
	ipv6HeaderLen = 40
	udpHeaderLen  = 8
	tcpHeaderLen  = 20
	// maxIPPayload keeps every packet within IPv4's 16-bit total length.
	maxIPPayload = 65535 - ipv4HeaderLen
)

// appendIP appends an IPv4 (RFC 791) or IPv6 (RFC 8200) header for a
// payload of n octets of protocol proto; IPv4 when both addresses are
// IPv4, else IPv6 (an IPv4 address then IPv4-mapped).
func appendIP(b []byte, src, dst netip.Addr, proto uint8, n int) []byte {
	if src.Is4() && dst.Is4() {
		start := len(b)
		s, d := src.As4(), dst.As4()
		b = append(b, 0x45, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(ipv4HeaderLen+n))
		b = append(b, 0, 0, 0x40, 0, 64, proto, 0, 0) // id 0, DF, TTL 64, checksum later
		b = append(b, s[:]...)
		b = append(b, d[:]...)
		binary.BigEndian.PutUint16(b[start+10:], ^fold(sum(0, b[start:start+ipv4HeaderLen])))
		return b
	}
	s, d := src.As16(), dst.As16()
	b = append(b, 0x60, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	b = append(b, proto, 64)
	b = append(b, s[:]...)
	return append(b, d[:]...)
}

// sum adds b to the one's complement sum s (RFC 1071 §2): eight octets
// at a time with end-around carry (§2(B): the sum may be computed in
// wider words and folded), then the tail by 16-bit words. The result is
// a 32-bit partial sum for fold.
func sum(s uint32, b []byte) uint32 {
	var acc, carry uint64
	acc = uint64(s)
	for len(b) >= 8 {
		acc, carry = bits.Add64(acc, binary.BigEndian.Uint64(b), 0)
		acc += carry
		b = b[8:]
	}
	// Fold 64 bits to 32 with end-around carry.
	acc = acc&0xffffffff + acc>>32
	acc = acc&0xffffffff + acc>>32
	for len(b) >= 2 {
		acc += uint64(b[0])<<8 | uint64(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	acc = acc&0xffffffff + acc>>32
	return uint32(acc&0xffffffff + acc>>32)
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// pseudoSum is the checksum of the IPv4 or IPv6 pseudo-header (RFC 9293
// §3.1, RFC 8200 §8.1).
func pseudoSum(src, dst netip.Addr, proto uint8, n int) uint32 {
	var s uint32
	if src.Is4() && dst.Is4() {
		a, c := src.As4(), dst.As4()
		s = sum(sum(0, a[:]), c[:])
	} else {
		a, c := src.As16(), dst.As16()
		s = sum(sum(0, a[:]), c[:])
	}
	return s + uint32(proto) + uint32(n)
}

// transportChecksum returns the UDP or TCP checksum over seg (its own
// checksum field zero) and payload, for a segment of the given total
// length.
func transportChecksum(src, dst netip.Addr, proto uint8, seg, payload []byte) uint16 {
	s := pseudoSum(src, dst, proto, len(seg)+len(payload))
	s = sum(s, seg) // 8 or 20 octets: even
	c := ^fold(sum(s, payload))
	if c == 0 && proto == protoUDP {
		c = 0xffff // RFC 768: a computed 0 is sent as all ones
	}
	return c
}

// appendUDP appends a UDP header (RFC 768) for a payload of n octets of
// which payload holds the first; the checksum is computed when full (the
// whole payload is there), else left 0 ("no checksum", RFC 768).
func appendUDP(b []byte, src, dst netip.AddrPort, payload []byte, n int, full bool) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint16(b, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	b = binary.BigEndian.AppendUint16(b, uint16(udpHeaderLen+n))
	b = append(b, 0, 0)
	if full {
		binary.BigEndian.PutUint16(b[start+6:], transportChecksum(src.Addr(), dst.Addr(), protoUDP, b[start:], payload))
	}
	return b
}

// appendTCP appends a TCP header (RFC 9293 §3.1) without options, window
// 65535, for a payload of n octets of which payload holds the first; the
// checksum is computed when full, else left 0 (a truncated capture cannot
// carry it; Wireshark does not verify TCP checksums by default).
func appendTCP(b []byte, src, dst netip.AddrPort, seq, ack uint32, flags uint8, payload []byte, n int, full bool) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint16(b, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	b = binary.BigEndian.AppendUint32(b, seq)
	b = binary.BigEndian.AppendUint32(b, ack)
	b = append(b, tcpHeaderLen/4<<4, flags, 0xff, 0xff, 0, 0, 0, 0)
	if full {
		binary.BigEndian.PutUint16(b[start+16:], transportChecksum(src.Addr(), dst.Addr(), protoTCP, b[start:], payload))
	}
	return b
}
