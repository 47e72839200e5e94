package workload

import (
	"encoding/binary"
	"fmt"
)

// What travels between the two sides besides the operations themselves.
// Every message the client sends (the Sends of each kind, Immediate Data,
// the Immediate Data of a Write with Immediate, and the sync) consumes one
// of the server's receive buffers in order (RFC 5041 §5.3: MSN order on
// queue 0), so both sides number the messages of a stream 0, 1, 2, ...
// and derive every payload from (stream, message number, length, kind):
// the server regenerates it and compares every octet.

const (
	// advertLen is the length of the advertisement, the server's first
	// Send on every stream: its target region (write area,
	// write-with-immediate area, atomic counter) as a Region, the STag the
	// client may invalidate, the largest operation size, the receive
	// buffers it keeps posted and the offsets of the areas from the
	// target's TO:
	//
	//	0        20        24    28       32       40           48
	//	| Region | invSTag | max | window | immOff | counterOff |
	advertLen = RegionLen + 28
	// pongLen is the length of the pong, the server's answer to the sync
	// (Immediate Data of kind 'P') once it has re-posted every buffer
	// consumed before: the STag to invalidate next, the messages it has
	// taken so far and its own reading of the atomic counter.
	//
	//	0         4         8          16
	//	| invSTag | received | counter  |
	pongLen = 16
)

type advert struct {
	target             Region
	invSTag            uint32
	max, window        uint32
	immOff, counterOff uint64
}

func (a advert) bytes() []byte {
	b := a.target.Append(make([]byte, 0, advertLen))
	b = binary.BigEndian.AppendUint32(b, a.invSTag)
	b = binary.BigEndian.AppendUint32(b, a.max)
	b = binary.BigEndian.AppendUint32(b, a.window)
	b = binary.BigEndian.AppendUint64(b, a.immOff)
	return binary.BigEndian.AppendUint64(b, a.counterOff)
}

func parseAdvert(b []byte) (advert, error) {
	if len(b) != advertLen {
		return advert{}, fmt.Errorf("advertisement of %d octets, want %d", len(b), advertLen)
	}
	target, err := ParseRegion(b)
	if err != nil {
		return advert{}, err
	}
	b = b[RegionLen:]
	a := advert{
		target:     target,
		invSTag:    binary.BigEndian.Uint32(b[0:]),
		max:        binary.BigEndian.Uint32(b[4:]),
		window:     binary.BigEndian.Uint32(b[8:]),
		immOff:     binary.BigEndian.Uint64(b[12:]),
		counterOff: binary.BigEndian.Uint64(b[20:]),
	}
	switch {
	case a.window < 2:
		return advert{}, fmt.Errorf("advertised window of %d receive buffers", a.window)
	case a.counterOff+8 > a.target.Length:
		return advert{}, fmt.Errorf("advertised counter at %d beyond the %d-octet target", a.counterOff, a.target.Length)
	case a.immOff < uint64(a.max) || a.counterOff < a.immOff+uint64(a.max) || (a.target.TO+a.counterOff)%8 != 0:
		return advert{}, fmt.Errorf("advertised layout overlaps: max %d, immediate area at %d, counter at %d",
			a.max, a.immOff, a.counterOff)
	}
	return a, nil
}

type pong struct {
	invSTag, received uint32
	counter           uint64
}

func (p pong) bytes() []byte {
	b := make([]byte, pongLen)
	binary.BigEndian.PutUint32(b[0:], p.invSTag)
	binary.BigEndian.PutUint32(b[4:], p.received)
	binary.BigEndian.PutUint64(b[8:], p.counter)
	return b
}

func parsePong(b []byte) (pong, error) {
	if len(b) != pongLen {
		return pong{}, fmt.Errorf("sync answer of %d octets, want %d", len(b), pongLen)
	}
	return pong{
		invSTag:  binary.BigEndian.Uint32(b[0:]),
		received: binary.BigEndian.Uint32(b[4:]),
		counter:  binary.BigEndian.Uint64(b[8:]),
	}, nil
}

// Message kinds: part of every payload's seed and of every Immediate Data
// value, so that a message arriving as another kind (a lost or spurious
// Solicited Event flag, an invalidation that did not happen) fails the
// comparison.
const (
	kindWrite     = 'w' // RDMA Write (client-side check by the Read back)
	kindSend      = 'S'
	kindSendSE    = 'E'
	kindSendInv   = 'V'
	kindSendSEInv = 'X'
	kindImm       = 'I'
	kindWriteImm  = 'W'
	kindSync      = 'P'
)

// sendKind is the kind of a received Send, from its flags.
func sendKind(solicited, invalidated bool) byte {
	switch {
	case solicited && invalidated:
		return kindSendSEInv
	case solicited:
		return kindSendSE
	case invalidated:
		return kindSendInv
	}
	return kindSend
}

// Immediate Data values (RFC 7306 §6: 8 octets opaque to RDMAP):
//
//	63     56  55  54        32 31            0
//	| kind   | SE | message mod 2^23 | value  |
//
// value is the length of the Write for a Write with Immediate and a check
// value derived from the stream and message number otherwise.
const immSeqMask = 1<<23 - 1

func immValue(kind byte, se bool, msg uint32, value uint32) uint64 {
	v := uint64(kind)<<56 | uint64(msg&immSeqMask)<<32 | uint64(value)
	if se {
		v |= 1 << 55
	}
	return v
}

func splitImm(v uint64) (kind byte, se bool, msg, value uint32) {
	return byte(v >> 56), v>>55&1 == 1, uint32(v>>32) & immSeqMask, uint32(v)
}

// immCheck is the value of an Immediate Data or sync message.
func immCheck(sid uint16, msg uint32) uint32 {
	return uint32(mix(uint64(sid)<<32|uint64(msg)) >> 32)
}

// mix is the SplitMix64 finalizer: a well-spread 64-bit hash.
func mix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}

// seed names the payload of one operation: the stream, its number (the
// message number for messages, the operation number for Writes), its
// length and its kind. The length is part of it so that a truncated
// message fails the comparison too.
func seed(sid uint16, n uint32, length int, kind byte) uint64 {
	return mix(mix(uint64(sid)<<40|uint64(kind)<<32|uint64(n)) ^ uint64(length))
}

// fill writes the xorshift64 sequence of s into b, 8 octets a step.
func fill(b []byte, s uint64) []byte {
	x := s | 1
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	if i < len(b) {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		for ; i < len(b); i++ {
			b[i] = byte(x)
			x >>= 8
		}
	}
	return b
}

// mismatch returns the offset of the first octet of b that differs from
// the sequence fill(·, s) writes, or -1 if none does.
func mismatch(b []byte, s uint64) int {
	var want [8]byte
	x := s | 1
	for i := 0; i < len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(want[:], x)
		n := min(8, len(b)-i)
		for j := range n {
			if b[i+j] != want[j] {
				return i + j
			}
		}
	}
	return -1
}
