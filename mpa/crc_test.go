package mpa

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func seq32(f func(i int) byte) []byte {
	b := make([]byte, 32)
	for i := range b {
		b[i] = f(i)
	}
	return b
}

// TestCRC32cRFC3720B4 checks the CRC32c known answers of RFC 3720 Appendix
// B.4, which RFC 5044 §4.4 adopts, including the on-wire byte order (least
// significant octet first).
func TestCRC32cRFC3720B4(t *testing.T) {
	iscsiRead := []byte{
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
		0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	}
	for _, tc := range []struct {
		name string
		in   []byte
		val  uint32
		wire []byte
	}{
		{"32 zeros", make([]byte, 32), 0x8A9136AA, []byte{0xaa, 0x36, 0x91, 0x8a}},
		{"32 ones", bytes.Repeat([]byte{0xff}, 32), 0x62A8AB43, []byte{0x43, 0xab, 0xa8, 0x62}},
		{"32 incrementing", seq32(func(i int) byte { return byte(i) }), 0x46DD794E, []byte{0x4e, 0x79, 0xdd, 0x46}},
		{"32 decrementing", seq32(func(i int) byte { return byte(31 - i) }), 0x113FDB5C, []byte{0x5c, 0xdb, 0x3f, 0x11}},
		{"iSCSI SCSI Read (10) PDU", iscsiRead, 0xD9963A56, []byte{0x56, 0x3a, 0x96, 0xd9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.val, crcOf(tc.in))
			assert.Equal(t, tc.wire, appendCRC(nil, crcOf(tc.in)))
			v, n, err := parseCRC(tc.wire)
			require.NoError(t, err)
			assert.Equal(t, 4, n)
			assert.Equal(t, tc.val, v)
			// Incremental computation over any split gives the same value.
			for cut := 0; cut <= len(tc.in); cut += 7 {
				assert.Equal(t, tc.val, updateCRC32c(updateCRC32c(0, tc.in[:cut]), tc.in[cut:]))
			}
		})
	}
}

func TestParseCRCTruncated(t *testing.T) {
	for n := range 4 {
		_, _, err := parseCRC(make([]byte, n))
		assert.ErrorIs(t, err, errTruncated)
	}
}

func TestAppendCRCNoAlloc(t *testing.T) {
	b := make([]byte, 0, 8)
	assert.Zero(t, testing.AllocsPerRun(100, func() { b = appendCRC(b[:0], 0x12345678) }))
}

func FuzzParseCRC(f *testing.F) {
	f.Add([]byte{0xaa, 0x36, 0x91, 0x8a})
	f.Add([]byte{1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := parseCRC(b)
		if err != nil {
			return
		}
		require.Equal(t, b[:n], appendCRC(nil, v))
	})
}

func BenchmarkCRC32c64KiB(b *testing.B) {
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		_ = crcOf(buf)
	}
}
