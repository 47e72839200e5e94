package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dataSACKPacket is a typical packet of the DDP data path: a SACK bundled
// ahead of two DATA chunks.
func dataSACKPacket(buf []byte, payload []byte) []byte {
	b := AppendHeader(buf[:0], Header{SrcPort: 5000, DstPort: 5000, VerificationTag: 0x01020304})
	s := SACK{CumTSNAck: 99, ARwnd: 1 << 20, Gaps: []GapAckBlock{{2, 4}, {6, 9}}, Dups: []uint32{97}}
	b = s.Append(b)
	for i := uint32(0); i < 2; i++ {
		d := Data{Unordered: true, Beginning: true, Ending: true, TSN: 100 + i, StreamID: 3, PPID: 16, UserData: payload}
		b = d.Append(b)
	}
	SetChecksum(b)
	return b
}

func TestZeroAllocsDataPath(t *testing.T) {
	payload := make([]byte, 1400)
	buf := make([]byte, 0, 4096)
	gaps := make([]GapAckBlock, 0, 16)
	dups := make([]uint32, 0, 16)
	var pkt []byte

	allocs := testing.AllocsPerRun(200, func() {
		pkt = dataSACKPacket(buf, payload)
	})
	assert.Zero(t, allocs, "append header, SACK and DATA, checksum")

	var sum int
	allocs = testing.AllocsPerRun(200, func() {
		p, err := ParsePacket(pkt)
		if err != nil {
			panic(err)
		}
		it := p.Chunks()
		for c, ok := it.Next(); ok; c, ok = it.Next() {
			switch c.Type {
			case ChunkSACK:
				s, err := ParseSACK(c, gaps, dups)
				if err != nil {
					panic(err)
				}
				sum += len(s.Gaps) + len(s.Dups)
			case ChunkData:
				d, err := ParseData(c)
				if err != nil {
					panic(err)
				}
				sum += len(d.UserData)
			}
		}
		if it.Err() != nil {
			panic(it.Err())
		}
	})
	assert.Zero(t, allocs, "parse packet, iterate, parse SACK and DATA")
	require.Positive(t, sum)
}

func TestZeroAllocsIterators(t *testing.T) {
	pkt := dataSACKPacket(make([]byte, 0, 2048), make([]byte, 100))
	params := hx(t, "0005 0008 c0a80001 c000 0004 c006 0008 00000001 bfff 0004")
	causes := hx(t, "0001 0008 0001 0000 000c 0005 78 000000 000d 0004")
	n := 0
	allocs := testing.AllocsPerRun(200, func() {
		ci := NewChunkIter(pkt[HeaderLen:])
		for _, ok := ci.Next(); ok; _, ok = ci.Next() {
			n++
		}
		pi := NewParamIter(params)
		for _, ok := pi.Next(); ok; _, ok = pi.Next() {
			n++
		}
		ki := NewCauseIter(causes)
		for _, ok := ki.Next(); ok; _, ok = ki.Next() {
			n++
		}
	})
	assert.Zero(t, allocs)
	assert.Positive(t, n)
}

func TestZeroAllocsControlChunks(t *testing.T) {
	buf := make([]byte, 0, 1024)
	info := []byte("heartbeat info, 20 o")
	hbChunk := chunkOf(t, (&Heartbeat{Info: info}).Append(nil))
	allocs := testing.AllocsPerRun(200, func() {
		b := AppendHeader(buf[:0], Header{VerificationTag: 1})
		h, err := ParseHeartbeat(hbChunk)
		if err != nil {
			panic(err)
		}
		h.Ack = true
		b = h.Append(b)
		b = (&Shutdown{CumTSNAck: 5}).Append(b)
		b = CookieAck{}.Append(b)
		start := len(b)
		b = BeginChunk(b, ChunkAbort, 0)
		b = AppendCauseUserAbortLike(b)
		b, _ = EndChunk(b, start)
		SetChecksum(b)
	})
	assert.Zero(t, allocs)
}

// AppendCauseUserAbortLike appends two causes in place, as an ABORT built
// straight into the packet would.
func AppendCauseUserAbortLike(b []byte) []byte {
	b = AppendCauseNoUserData(b, 7)
	return AppendCause(b, CauseProtocolViolation, nil)
}
