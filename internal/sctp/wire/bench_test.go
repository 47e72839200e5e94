package wire

import "testing"

func BenchmarkAppendDataSACKPacket(b *testing.B) {
	payload := make([]byte, 1400)
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(dataSACKPacket(buf, payload))))
	b.ReportAllocs()
	for b.Loop() {
		dataSACKPacket(buf, payload)
	}
}

func BenchmarkParseDataSACKPacket(b *testing.B) {
	pkt := dataSACKPacket(make([]byte, 0, 4096), make([]byte, 1400))
	gaps := make([]GapAckBlock, 0, 16)
	dups := make([]uint32, 0, 16)
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := ParsePacket(pkt)
		if err != nil {
			b.Fatal(err)
		}
		it := p.Chunks()
		for c, ok := it.Next(); ok; c, ok = it.Next() {
			if c.Type == ChunkSACK {
				if _, err := ParseSACK(c, gaps, dups); err != nil {
					b.Fatal(err)
				}
			} else if _, err := ParseData(c); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// The chunk work alone, without the CRC32c.
func BenchmarkParseDataSACKNoChecksum(b *testing.B) {
	pkt := dataSACKPacket(make([]byte, 0, 4096), make([]byte, 1400))
	gaps := make([]GapAckBlock, 0, 16)
	dups := make([]uint32, 0, 16)
	b.ReportAllocs()
	for b.Loop() {
		p, _ := ParsePacketNoChecksum(pkt)
		it := p.Chunks()
		for c, ok := it.Next(); ok; c, ok = it.Next() {
			if c.Type == ChunkSACK {
				_, _ = ParseSACK(c, gaps, dups)
			} else {
				_, _ = ParseData(c)
			}
		}
	}
}

func BenchmarkAppendDataHeader(b *testing.B) {
	buf := make([]byte, 0, 64)
	d := Data{Unordered: true, Beginning: true, Ending: true, TSN: 1, StreamID: 3, PPID: 16}
	b.ReportAllocs()
	for b.Loop() {
		d.AppendHeader(buf[:0], 1400)
	}
}

func BenchmarkParseData(b *testing.B) {
	c := chunkOf(b, (&Data{TSN: 1, UserData: make([]byte, 1400)}).Append(nil))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseData(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSACKAppendParse(b *testing.B) {
	s := SACK{CumTSNAck: 99, ARwnd: 1 << 20, Gaps: []GapAckBlock{{2, 4}, {6, 9}, {11, 11}, {20, 30}}}
	buf := make([]byte, 0, 128)
	gaps := make([]GapAckBlock, 0, 16)
	b.ReportAllocs()
	for b.Loop() {
		out := s.Append(buf[:0])
		c, _, _ := ParseChunk(out)
		if _, err := ParseSACK(c, gaps, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func benchChecksum(b *testing.B, n int) {
	pkt := make([]byte, n)
	SetChecksum(pkt)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		if !ChecksumOK(pkt) {
			b.Fatal("checksum")
		}
	}
}

func BenchmarkChecksum1500(b *testing.B)  { benchChecksum(b, 1500) }
func BenchmarkChecksum9000(b *testing.B)  { benchChecksum(b, 9000) }
func BenchmarkChecksum65000(b *testing.B) { benchChecksum(b, 65000) }
