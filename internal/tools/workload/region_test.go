package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegionImage: the encoding, octet by octet, and back.
func TestRegionImage(t *testing.T) {
	r := Region{STag: 0x0012AB34, TO: 0x1000, Length: 65536}
	img := []byte{
		0x00, 0x12, 0xAB, 0x34,
		0, 0, 0, 0, 0, 0, 0x10, 0x00,
		0, 0, 0, 0, 0, 0x01, 0x00, 0x00,
	}
	assert.Equal(t, img, r.Append(nil))
	got, err := ParseRegion(append(img, 0xFF)) // what follows is the caller's
	require.NoError(t, err)
	assert.Equal(t, r, got)
	_, err = ParseRegion(img[:RegionLen-1])
	assert.Error(t, err)
	b := make([]byte, 0, RegionLen)
	assert.Zero(t, testing.AllocsPerRun(100, func() { b = r.Append(b[:0]) }))
}

func FuzzParseRegion(f *testing.F) {
	f.Add(Region{STag: 1, TO: 2, Length: 3}.Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRegion(b)
		if err != nil {
			require.Less(t, len(b), RegionLen)
			return
		}
		require.Equal(t, b[:RegionLen], r.Append(nil))
	})
}
