package sctp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/crc32c"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// RFC 9260 §6.9: a message larger than a packet's chunk is fragmented,
// here into as many fragments as cutting at the largest chunk would make,
// whose chunks pad to one size wherever the sizes q and q+1 pad alike, so
// that a run of equal packets goes on across the message's end; every
// length from 1 to four chunks and beyond at chunk sizes of each residue
// modulo four, and 64 KiB at MTU 1500 and 9000.
func TestRFC9260_6_9_FragmentsOfOneSize(t *testing.T) {
	pad := func(n int) int { return (wire.DataHeaderLen + n + 3) &^ 3 }
	check := func(total, frag int) bool {
		t.Helper()
		c := newFragCut(total, frag)
		require.Equal(t, (total+frag-1)/frag, c.n, "total %d frag %d", total, frag)
		sum, sizes := 0, map[int]bool{}
		for f := range c.n {
			n := c.size(f)
			require.Positive(t, n)
			require.LessOrEqual(t, n, frag)
			sum += n
			sizes[pad(n)] = true
		}
		require.Equal(t, total, sum)
		if c.even {
			require.Len(t, sizes, 1, "total %d frag %d", total, frag)
		} else if c.n > 1 {
			require.Equal(t, frag, c.size(0), "cut at the largest chunk")
		}
		return c.even
	}
	even, cut := 0, 0
	for _, frag := range []int{1000, 1001, 1002, 1003} {
		for total := 1; total <= 4*frag+7; total++ {
			if check(total, frag) {
				even++
			} else if total > frag {
				cut++
			}
		}
	}
	assert.Greater(t, even, 2*cut, "most lengths cut evenly")
	for _, frag := range []int{1424, 8924} { // 64 KiB at MTU 1500 and 9000
		assert.True(t, check(65536, frag), "64 KiB, chunks of %d", frag)
	}
}

// A 64 KiB message written at MTU 1500 arrives whole, in fragments whose
// packets are of one size.
func TestWriteMsgEvenFragmentsArrive(t *testing.T) {
	cli, _, _, sr := pair(t, &Config{MTU: 1500})
	msg := make([]byte, 64<<10)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	require.NoError(t, cli.WriteMsg(2, 17, msg))
	got := sr.wait(t, 1)
	assert.Equal(t, msg, got[0].b)
}

// The CRC32c appendChunks takes while copying a chunk (txChunk.crc: its
// data and padding, RFC 9260 §6.8) is the CRC32c of what it copied,
// however the message's parts fall across chunks and across crcBlock
// (a DDP header and its payload, many small parts, parts longer than a
// block), and chunks below directChunk carry none.
func TestAppendChunksCRC_RFC9260_6_8(t *testing.T) {
	msg := make([]byte, 3*crcBlock+777)
	for i := range msg {
		msg[i] = byte(i*7 + i>>8)
	}
	split := func(total int, at ...int) [][]byte {
		var parts [][]byte
		prev := 0
		for _, a := range at {
			parts = append(parts, msg[prev:a])
			prev = a
		}
		return append(parts, msg[prev:total])
	}
	cases := map[string]struct {
		parts [][]byte
		frag  int
	}{
		"one part, MTU 1500":               {split(65536 % len(msg)), 1416},
		"DDP header and payload, MTU 1500": {split(1416*3+5, 18), 1416},
		"header, empty part, payload":      {split(4000, 14, 14), 1500},
		"many small parts":                 {split(3000, 1, 2, 3, 10, 100, 1000, 1001, 2999), 1200},
		"parts across blocks, one chunk":   {split(len(msg), 5, crcBlock-1, crcBlock+3, 2*crcBlock), 65000},
		"a block exactly":                  {split(crcBlock+2, 2), 65000},
		"chunks below directChunk":         {split(2000, 10), 700},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			total := 0
			for _, p := range c.parts {
				total += len(p)
			}
			chunks := appendChunks(nil, 3, 16, c.parts, newFragCut(total, c.frag), true)
			defer releaseChunks(chunks)
			var got []byte
			for _, ch := range chunks {
				b := ch.chunk()
				c, _, err := wire.ParseChunk(b)
				require.NoError(t, err)
				d, err := wire.ParseData(c)
				require.NoError(t, err)
				got = append(got, d.UserData...)
				require.Equal(t, len(d.UserData) >= directChunk, ch.hasCRC)
				if ch.hasCRC {
					assert.Equal(t, crc32c.Checksum(b[wire.DataHeaderLen:]), ch.crc)
				}
			}
			assert.Equal(t, msg[:total], got)
		})
	}
}
