package bench

import (
	"encoding/binary"
	"time"
)

// setupLen is the length of a Setup message.
const setupLen = 32

// setupMagic begins every Setup message.
const setupMagic = "SRB1"

// Setup flags.
const (
	// flagReverse asks the server to take the active role.
	flagReverse uint8 = 1 << 0
	// flagLatency selects the latency variant (one operation in flight).
	flagLatency uint8 = 1 << 1
	// flagEvents makes both sides of a latency ping-pong (Send, Write
	// with Immediate), and the receiving side of a bandwidth Send or Write
	// with Immediate, wait for each completion in the test's goroutine
	// (perftest's -e, --events) instead of taking it in a CQ handler on
	// the goroutine that received the message (rdmap.CQ.SetHandler, the
	// counterpart of perftest's default busy polling).
	flagEvents uint8 = 1 << 2
)

// MaxBuffers is the largest number of buffers a stream cycles through
// (Setup.Buffers).
const MaxBuffers = 1024

// MaxDepth is the largest number of operations in flight per stream.
const MaxDepth = 128

// MaxRxDepth is the largest number of receive buffers the passive side
// posts for a credited test (Setup.RxDepth): with its two spares and the
// control receive it stays within rdmap.DefaultRQDepth.
const MaxRxDepth = 240

// setupMsg is the Setup, the client's first Send on each stream (its
// layout is in docs/cli.md, "The control exchange on each stream").
// Exactly one of Iters and Duration is non-zero; RxDepth 0 means Depth
// (the octets were reserved before it existed), Buffers 0 one buffer.
type setupMsg struct {
	Test     Test
	Flags    uint8
	Size     uint32
	Depth    uint32
	Iters    uint64
	Duration time.Duration // whole milliseconds on the wire
	// RxDepth is the number of data receive buffers the passive side
	// posts for the credited tests (bandwidth Send and Write with
	// Immediate; perftest's rx depth): the active side keeps at most this
	// many messages unacknowledged by a credit. 0 means Depth; at most
	// MaxRxDepth. Other tests ignore it.
	RxDepth uint32
	// Buffers is how many buffers of the message size each side's
	// registered region holds: operation i of the stream uses buffer
	// i mod Buffers on both sides (its source and its remote target, or
	// its remote source and its sink), so that one stream touches as much
	// memory as Buffers streams of one buffer each. 0 means 1; at most
	// MaxBuffers. A Send's receive buffers are the passive side's own
	// (sinkSlots) and do not cycle; neither does a ping's echo.
	Buffers uint16
}

// buffers returns Buffers, 1 for 0.
func (s setupMsg) buffers() int { return max(int(s.Buffers), 1) }

// Reverse reports flagReverse.
func (s *setupMsg) Reverse() bool { return s.Flags&flagReverse != 0 }

// Latency reports flagLatency.
func (s *setupMsg) Latency() bool { return s.Flags&flagLatency != 0 }

// Events reports flagEvents.
func (s *setupMsg) Events() bool { return s.Flags&flagEvents != 0 }

// Validate checks the rules parseSetup enforces.
func (s *setupMsg) Validate() error {
	switch {
	case !s.Test.valid():
		return malformed("setup", "unknown test %d", s.Test)
	case s.Flags&^(flagReverse|flagLatency|flagEvents) != 0:
		return malformed("setup", "reserved flags %#x set", s.Flags)
	case s.Size == 0:
		return malformed("setup", "zero message size")
	case s.Test.Atomic() && s.Size != 8:
		return malformed("setup", "atomic operands are 8 octets, not %d", s.Size)
	case s.Depth == 0 || s.Depth > MaxDepth:
		return malformed("setup", "depth %d outside 1..%d", s.Depth, MaxDepth)
	case s.Buffers > MaxBuffers:
		return malformed("setup", "%d buffers above %d", s.Buffers, MaxBuffers)
	case s.Buffers > 1 && s.Test == TestPing:
		return malformed("setup", "ping echoes in one buffer, not %d", s.Buffers)
	case s.RxDepth > MaxRxDepth:
		return malformed("setup", "rx depth %d above %d", s.RxDepth, MaxRxDepth)
	case (s.Iters == 0) == (s.Duration <= 0):
		return malformed("setup", "exactly one of iterations and duration must be set")
	case s.Duration < 0 || s.Duration/time.Millisecond > 1<<32-1 || s.Duration%time.Millisecond != 0:
		return malformed("setup", "duration %v not a whole number of milliseconds below 2^32", s.Duration)
	}
	return nil
}

// appendTo appends the encoded message; it allocates nothing when b has
// setupLen octets of spare capacity.
func (s *setupMsg) appendTo(b []byte) []byte {
	b = append(b, setupMagic...)
	b = append(b, uint8(s.Test), s.Flags)
	b = binary.BigEndian.AppendUint16(b, s.Buffers)
	b = binary.BigEndian.AppendUint32(b, s.Size)
	b = binary.BigEndian.AppendUint32(b, s.Depth)
	b = binary.BigEndian.AppendUint64(b, s.Iters)
	b = binary.BigEndian.AppendUint32(b, uint32(s.Duration/time.Millisecond))
	return binary.BigEndian.AppendUint32(b, s.RxDepth)
}

// parseSetup decodes and validates a Setup message at the start of b.
func parseSetup(b []byte) (setupMsg, int, error) {
	if len(b) < setupLen {
		return setupMsg{}, 0, malformed("setup", "%d octets, want %d", len(b), setupLen)
	}
	if string(b[:4]) != setupMagic {
		return setupMsg{}, 0, malformed("setup", "bad magic %q", b[:4])
	}
	s := setupMsg{
		Test: Test(b[4]), Flags: b[5],
		Size:     binary.BigEndian.Uint32(b[8:]),
		Depth:    binary.BigEndian.Uint32(b[12:]),
		Iters:    binary.BigEndian.Uint64(b[16:]),
		Duration: time.Duration(binary.BigEndian.Uint32(b[24:])) * time.Millisecond,
		RxDepth:  binary.BigEndian.Uint32(b[28:]),
		Buffers:  binary.BigEndian.Uint16(b[6:]),
	}
	if err := s.Validate(); err != nil {
		return s, 0, err
	}
	return s, setupLen, nil
}
