package wire_test

import (
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// A packet with a SACK and a DATA chunk carrying a DDP segment (RFC 5043
// §10: unordered, PPID 16) is built into a reused buffer, then read back
// chunk by chunk.
func Example() {
	buf := make([]byte, 0, 1500)
	gaps := make([]wire.GapAckBlock, 0, 8) // reused by every ParseSACK

	b := wire.AppendHeader(buf, wire.Header{SrcPort: 5000, DstPort: 5000, VerificationTag: 0x5ca1ab1e})
	sack := wire.SACK{CumTSNAck: 41, ARwnd: 1 << 20, Gaps: []wire.GapAckBlock{{Start: 2, End: 3}}}
	b = sack.Append(b)
	data := wire.Data{Unordered: true, Beginning: true, Ending: true, TSN: 1000, StreamID: 7, PPID: 16, UserData: []byte("DDP segment")}
	b = data.Append(b)
	wire.SetChecksum(b)

	pkt, err := wire.ParsePacket(b)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("tag %#x, %d octets\n", pkt.Header.VerificationTag, len(b))
	it := pkt.Chunks()
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		switch c.Type {
		case wire.ChunkSACK:
			s, err := wire.ParseSACK(c, gaps, nil)
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("%v: cum ack %d, gap blocks %v\n", c.Type, s.CumTSNAck, s.Gaps)
		case wire.ChunkData:
			d, err := wire.ParseData(c)
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("%v: TSN %d stream %d U=%v %q\n", c.Type, d.TSN, d.StreamID, d.Unordered, d.UserData)
		default:
			fmt.Printf("%v: not recognized, %v\n", c.Type, c.Type.Action())
		}
	}
	if err := it.Err(); err != nil {
		fmt.Println(err)
	}

	b[len(b)-1] ^= 1
	_, err = wire.ParsePacket(b)
	fmt.Println(err)

	// Output:
	// tag 0x5ca1ab1e, 60 octets
	// SACK: cum ack 41, gap blocks [{2 3}]
	// DATA: TSN 1000 stream 7 U=true "DDP segment"
	// internal/sctp/wire: bad checksum
}

// An endpoint that meets a chunk type it does not implement does what the
// type's two highest bits say (RFC 9260 §3.2); here it reports the chunk
// in an ERROR chunk built in place.
func ExampleChunkType_Action() {
	unknown := wire.Chunk{Type: 0xc5, Value: []byte{1, 2, 3, 4}}
	a := unknown.Type.Action()
	fmt.Println(a, a.Skip(), a.Report())

	b := wire.AppendHeader(nil, wire.Header{VerificationTag: 9})
	start := len(b)
	b = wire.BeginChunk(b, wire.ChunkError, 0)
	b = wire.AppendCauseUnrecognizedChunk(b, unknown)
	b, err := wire.EndChunk(b, start)
	if err != nil {
		fmt.Println(err)
		return
	}
	wire.SetChecksum(b)
	fmt.Printf("% x\n", b[start:])
	// Output:
	// skip and report true true
	// 09 00 00 10 00 06 00 0c c5 00 00 08 01 02 03 04
}
