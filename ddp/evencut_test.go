package ddp

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
)

// evenStream is a recStream whose packets pad to four octets after a
// prefix of two (sctpllp's DDP-SSN in a DATA chunk): with WireSize (package llp).
type evenStream struct {
	recStream
	off bool // WireSize 0: sizes do not matter
}

func (s *evenStream) WireSize(n int) int {
	if s.off {
		return 0
	}
	return (16 + 2 + n + 3) &^ 3
}

// segSizes parses recorded segments: each one's length (header and
// payload) and the payload reassembled.
func segSizes(t *testing.T, segs [][]byte) (sizes []int, payload []byte) {
	t.Helper()
	for _, b := range segs {
		var seg iwarpwire.DDPSegment
		require.NoError(t, iwarpwire.ParseDDPSegment(b, &seg))
		sizes = append(sizes, len(b))
		payload = append(payload, seg.Payload...)
	}
	return sizes, payload
}

// Over an LLP with WireSize a message is cut into the fewest segments the MULPDU
// allows (as many as cutting at the MULPDU), whose packets are all of one
// size, so that a run of equal packets does not end at the message's end
// (RFC 5041 §5.2 bounds a segment by the MULPDU only): 64 KiB at the
// MULPDU of MTU 1500 and of MTU 9000, tagged and untagged. Where the
// sizes q and q+1 pad differently, or WireSize is 0, the message is cut
// at the MULPDU as before.
func TestSendEvenCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mulpdu int
		size   int
		off    bool
		even   bool
	}{
		{"64K at MTU 1500", 1422, 65536, false, true},
		{"64K at MTU 9000", 8922, 65536, false, true},
		{"a segment and a bit", 1422, 1500, false, true},
		{"WireSize 0", 1422, 65536, true, false},
		{"fits one segment", 1422, 1000, false, false},
	} {
		for _, tagged := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/tagged=%v", tc.name, tagged), func(t *testing.T) {
				s := &evenStream{recStream: recStream{schedule: []int{tc.mulpdu}}, off: tc.off}
				snd := NewSender(s)
				msg := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, tc.size/7+1)[:tc.size]
				hdr := iwarpwire.DDPTaggedHeaderLen
				if tagged {
					require.NoError(t, snd.SendTagged(0x40, 0x1234, 4096, msg))
				} else {
					hdr = iwarpwire.DDPUntaggedHeaderLen
					_, err := snd.SendUntagged([5]byte{0x41}, 0, msg)
					require.NoError(t, err)
				}
				sizes, got := segSizes(t, s.segs)
				require.Equal(t, msg, got, "payload reassembles")
				room := tc.mulpdu - hdr
				assert.Len(t, sizes, (tc.size+room-1)/room, "no more segments than cutting at the MULPDU")
				wires := map[int]bool{}
				for _, n := range sizes {
					assert.LessOrEqual(t, n, tc.mulpdu)
					wires[(16+2+n+3)&^3] = true
				}
				if tc.even {
					assert.Len(t, wires, 1, "one wire size: %v", sizes)
				} else if len(sizes) > 1 {
					assert.Equal(t, tc.mulpdu, sizes[0], "cut at the MULPDU")
				}
			})
		}
	}
}

// Every message length from one to a few segments, at MULPDUs of every
// residue modulo four: as many segments as cutting at the MULPDU, each
// within it; one wire size wherever the shares allow it (q and q+1 pad
// alike), which is most lengths; the payload reassembles.
func TestEvenCutAllLengths(t *testing.T) {
	evened, cut := 0, 0
	for _, mulpdu := range []int{600, 601, 602, 603} {
		room := mulpdu - iwarpwire.DDPTaggedHeaderLen
		for size := 1; size <= 4*room+5; size++ {
			s := &evenStream{recStream: recStream{schedule: []int{mulpdu}}}
			msg := make([]byte, size)
			msg[size-1] = 9
			require.NoError(t, NewSender(s).SendTagged(0, 1, 0, msg))
			sizes, got := segSizes(t, s.segs)
			require.Equal(t, msg, got)
			require.Len(t, sizes, (size+room-1)/room, "size %d", size)
			wires := map[int]bool{}
			for _, n := range sizes {
				require.LessOrEqual(t, n, mulpdu)
				wires[s.WireSize(n)] = true
			}
			if len(sizes) > 1 {
				if len(wires) == 1 {
					evened++
				} else {
					cut++
					require.Equal(t, mulpdu, sizes[0], "size %d: neither even nor cut at the MULPDU", size)
				}
			}
		}
	}
	t.Logf("multi-segment messages of one wire size: %d; cut at the MULPDU: %d", evened, cut)
	assert.Greater(t, evened, 2*cut)
}
