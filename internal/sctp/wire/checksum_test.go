package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/crc32c"
)

// The CRC32c of 32 zero octets is 0x8A9136AA (RFC 3720 §B.4, the same
// CRC as RFC 9260 Appendix B); SCTP stores it least significant octet
// first.
func TestChecksumVector_RFC9260_AppendixB(t *testing.T) {
	pkt := make([]byte, 32)
	assert.Equal(t, uint32(0x8A9136AA), Checksum(pkt))
	SetChecksum(pkt)
	assert.Equal(t, hx(t, "aa 36 91 8a"), pkt[8:12])
	assert.True(t, ChecksumOK(pkt))
}

func TestChecksumIgnoresTheField_RFC9260_6_8(t *testing.T) {
	pkt := hx(t, "1388 1388 01020304 deadbeef 0b000004")
	c := Checksum(pkt)
	assert.Equal(t, hx(t, "deadbeef"), pkt[8:12], "Checksum does not modify the packet")
	SetChecksum(pkt)
	assert.Equal(t, c, Checksum(pkt))
	assert.True(t, ChecksumOK(pkt))
	for i := range pkt {
		bad := append([]byte(nil), pkt...)
		bad[i] ^= 0x10
		assert.False(t, ChecksumOK(bad), "octet %d flipped", i)
	}
}

func TestChecksumShort(t *testing.T) {
	assert.Zero(t, Checksum(make([]byte, 11)))
	assert.False(t, ChecksumOK(make([]byte, 11)))
	assert.False(t, ChecksumOK(nil))
	SetChecksum(make([]byte, 5)) // nothing to set, no panic
}

func TestZeroChecksumRejected_RFC9260_6_8(t *testing.T) {
	pkt := hx(t, "1388 1388 01020304 00000000 0b000004")
	require.NotZero(t, Checksum(pkt))
	assert.False(t, ChecksumOK(pkt), "a zero checksum is valid only if negotiated (RFC 9653)")
}

// SetChecksumTail with the CRC32c of the octets from head on, taken
// beforehand, stores what SetChecksum computes over the whole packet
// (RFC 9260 §6.8), whatever the Checksum field held.
func TestSetChecksumTail(t *testing.T) {
	for _, c := range []struct{ head, tail int }{{HeaderLen, 0}, {HeaderLen + 16, 1024}, {HeaderLen + 16, 65448}, {HeaderLen + 20, 3}, {100, 1400}} {
		pkt := make([]byte, c.head+c.tail)
		for i := range pkt {
			pkt[i] = byte(i*7 + c.tail)
		}
		want := append([]byte(nil), pkt...)
		SetChecksum(want)
		tail := crc32c.Checksum(pkt[c.head:])
		SetChecksumTail(pkt, c.head, tail, crc32c.Shift(c.tail))
		assert.Equal(t, want[8:12], pkt[8:12], "head %d, tail %d", c.head, c.tail)
		assert.True(t, ChecksumOK(pkt))
	}
}

// SetChecksumTailShift, the table form, stores the same checksum as
// SetChecksumTail, for a table built afresh and for one reused after a
// Reset to another length.
func TestSetChecksumTailShift(t *testing.T) {
	var s TailShift
	for _, c := range []struct{ head, tail int }{{HeaderLen, 0}, {HeaderLen + 16, 1024}, {HeaderLen + 16, 65448}, {HeaderLen + 20, 3}, {100, 1400}, {HeaderLen + 16, 1436}} {
		pkt := make([]byte, c.head+c.tail)
		for i := range pkt {
			pkt[i] = byte(i*13 + c.head)
		}
		want := append([]byte(nil), pkt...)
		SetChecksum(want)
		s.Reset(c.tail)
		require.Equal(t, c.tail, s.Len())
		SetChecksumTailShift(pkt, c.head, crc32c.Checksum(pkt[c.head:]), &s)
		assert.Equal(t, want[8:12], pkt[8:12], "head %d, tail %d", c.head, c.tail)
		assert.True(t, ChecksumOK(pkt))
	}
}
