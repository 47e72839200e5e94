package sctp

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// groControlForTest is the UDP_GRO control message a read of datagrams of
// seg octets carries.
func groControlForTest(seg int) []byte {
	oob := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level = unix.IPPROTO_UDP
	h.Type = unix.UDP_GRO
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(oob[unix.CmsgLen(0):], uint32(seg))
	return oob
}

func TestGROSegment(t *testing.T) {
	assert.Equal(t, 1452, groSegment(groControlForTest(1452)))
	two := append(groControlForTest(7), groControlForTest(1200)...)
	assert.Equal(t, 7, groSegment(two), "the first UDP_GRO message")
	other := groControlForTest(9)
	(*unix.Cmsghdr)(unsafe.Pointer(&other[0])).Type = unix.UDP_SEGMENT
	assert.Equal(t, 1200, groSegment(append(other, groControlForTest(1200)...)), "another message first")
	assert.Zero(t, groSegment(nil))
	assert.Zero(t, groSegment(groControlForTest(1452)[:unix.CmsgLen(4)-1]), "cut short")
}

// groSegment reads the segment size from whatever control messages a
// read returned, never beyond them; anything malformed reads as one
// datagram (0).
func FuzzGROSegment(f *testing.F) {
	f.Add(groControlForTest(1452))
	f.Add(append(groControlForTest(7), groControlForTest(1200)...))
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, oob []byte) {
		if seg := groSegment(oob); seg != 0 {
			require.GreaterOrEqual(t, len(oob), unix.CmsgLen(4))
		}
	})
}
