package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The fuzz targets feed arbitrary octets to the parsers: nothing may
// panic, every length is checked, and whatever parses survives
// append-and-parse-again unchanged (roundTripChunk). Seeds: the f.Add
// calls and testdata/fuzz/<target>/, which holds packets captured from a
// pion/sctp association (TestPionInterop).

// FuzzPacket parses a whole packet (its checksum made right, so the
// chunks are reached) and every chunk in it.
func FuzzPacket(f *testing.F) {
	f.Add(dataSACKPacket(nil, []byte("payload")))
	f.Add(hx(f, "1388 1388 00000000 00000000 01000014 11223344 00100000 000a 000a 00000064"))
	f.Add(hx(f, "1388 1388 01020304 00000000 0b000004 07000008 00000001 0e010004"))
	f.Add(hx(f, "1388 1388 01020304 00000000 bf000005 aa000000 3f000004"))
	f.Fuzz(func(t *testing.T, b []byte) {
		b = append([]byte(nil), b...)
		SetChecksum(b)
		p, err := ParsePacket(b)
		if err != nil {
			require.Less(t, len(b), HeaderLen)
			return
		}
		n, verr := p.Validate()
		it := p.Chunks()
		seen := 0
		for c, ok := it.Next(); ok; c, ok = it.Next() {
			seen++
			roundTripChunk(t, c)
		}
		require.Equal(t, n, seen)
		require.Equal(t, verr, it.Err())
		if len(b) > HeaderLen {
			b[len(b)-1] ^= 0x80
			_, err = ParsePacket(b)
			require.ErrorIs(t, err, ErrChecksum, "a flipped bit fails the CRC32c")
		}
	})
}

// FuzzChunk parses one chunk; octets that do not frame a chunk are also
// tried as type, flags and value, so that every chunk parser is reached
// with arbitrary values.
func FuzzChunk(f *testing.F) {
	for _, s := range []string{
		"00 07 0013 00000064 0003 0000 00000010 aabbcc 00",
		"00 03 0010 0000002a 0005 0000 00000010",
		"03 00 001c 0000000c 00004000 0002 0001 0002 0003 0005 0005 0000000d",
		"03 00 0010 00000001 00000000 ffff ffff",
		"04 00 000d 0001 0009 0102030405 000000",
		"06 01 0010 000c 0007 627965 00 000d 0004",
		"07 00 0008 fffffffe",
		"09 00 000c 0006 0008 bf000004",
		"0a 00 0007 010203 00",
		"0e 01 0004",
		"c0 00 0010 00000100 0001 0005 0002 ffff",
		"02 00 0028 11223344 00100000 000a 000a 00000064 0007 0005 01 000000 ffff 0005 aa000000",
	} {
		f.Add(hx(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, _, err := ParseChunk(b); err == nil {
			roundTripChunk(t, c)
		}
		if len(b) >= 2 && len(b)-2 <= MaxChunkLen-ChunkHeaderLen {
			roundTripChunk(t, Chunk{Type: ChunkType(b[0]), Flags: b[1], Value: b[2:]})
		}
	})
}

// FuzzParams reads octets as the parameters of an INIT and of an INIT ACK,
// and answers them as an endpoint would: an INIT ACK echoing the
// unrecognized ones, an Unrecognized Parameters cause.
func FuzzParams(f *testing.F) {
	for _, s := range []string{
		"0005 0008 c0a80001 0006 0014 20010db8000000000000000000000001 0009 0008 00002710 000c 0006 0005 0000 c000 0004 8008 0006 c082 0000 c006 0008 00000001 8000 0004",
		"0007 0009 0102030405 000000 0008 000c 4001 0008 00000000",
		"3fff 0005 aa000000 c006 0008 00000001",
		"7fff 0005 aa000000 ffff 0004 bfff 0004",
		"000b 000e 686f73742e6578616d706c65",
		"0005 000a c0a800010000",
		"c006 0008 00000001 8001 0008 00000001", // RFC 9653 §4
		"8001 0006 0001 0000 8001 0008 00000000",
	} {
		f.Add(hx(f, s))
	}
	fixed := hx(f, "11223344 00100000 000a 000a 00000064")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > MaxChunkLen-InitHeaderLen {
			return
		}
		for _, typ := range []ChunkType{ChunkInit, ChunkInitAck} {
			v := append(append([]byte(nil), fixed...), b...)
			roundTripChunk(t, Chunk{Type: typ, Value: v})
		}
		it := NewParamIter(b)
		walkParams(t, it, false)
	})
}

// FuzzCauses reads octets as the error causes of an ABORT and an ERROR.
func FuzzCauses(f *testing.F) {
	for _, s := range []string{
		"0001 0008 1234 0000 0002 000c 00000002 0007 c006",
		"0003 0008 002625a0 0004 0004 0005 000c 000b 0006 6800 0000",
		"0006 0009 ff01 0005 09 000000 0008 0008 ffff 0004",
		"0009 0008 0000004d 000c 0005 78 000000 000d 0004",
		"0002 0008 ffffffff",
	} {
		f.Add(hx(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > MaxChunkLen-ChunkHeaderLen {
			return
		}
		roundTripChunk(t, Chunk{Type: ChunkAbort, Value: b})
		roundTripChunk(t, Chunk{Type: ChunkError, Value: b})
	})
}
