package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/workload"
)

// An Advert built by hand: STag 0x0012AB34, TO 0, 65536 octets.
var advertImage = []byte{
	'S', 'R', 'A', '2',
	0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00,
	0x00, 0x12, 0xAB, 0x34,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
}

func TestAdvertImage(t *testing.T) {
	a, n, err := parseAdvert(advertImage)
	require.NoError(t, err)
	assert.Equal(t, advertLen, n)
	assert.Equal(t, advertMsg{Region: workload.Region{STag: 0x0012AB34, Length: 65536}}, a)
	assert.Equal(t, advertImage, a.appendTo(nil))
	assert.Equal(t, advertLen, len(a.appendTo(nil)))
	refused := advertMsg{Status: statusTooLarge}
	got, _, err := parseAdvert(refused.appendTo(nil))
	require.NoError(t, err)
	assert.Equal(t, refused, got)
	assert.Contains(t, got.Status.String(), "max-size")
}

func TestAdvertRejects(t *testing.T) {
	mut := func(f func(b []byte)) []byte {
		b := append([]byte(nil), advertImage...)
		f(b)
		return b
	}
	for name, b := range map[string][]byte{
		"truncated":   advertImage[:10],
		"magic":       mut(func(b []byte) { b[3] = '1' }),
		"reserved":    mut(func(b []byte) { b[6] = 1 }),
		"reserved 11": mut(func(b []byte) { b[11] = 1 }),
		"status":      mut(func(b []byte) { b[4] = 9 }),
		"stag 0":      mut(func(b []byte) { b[13], b[14], b[15] = 0, 0, 0 }),
		"to":          mut(func(b []byte) { b[23] = 1 }),
	} {
		_, _, err := parseAdvert(b)
		assert.ErrorIs(t, err, errMalformed, name)
	}
}

func TestAdvertAppendNoAlloc(t *testing.T) {
	a := advertMsg{Region: workload.Region{STag: 7, Length: 8}}
	b := make([]byte, 0, advertLen)
	assert.Zero(t, testing.AllocsPerRun(100, func() { b = a.appendTo(b[:0]) }))
}

func FuzzAdvert(f *testing.F) {
	f.Add(advertImage)
	f.Add((&advertMsg{Status: statusBadSetup}).appendTo(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, n, err := parseAdvert(b)
		if err != nil {
			return
		}
		require.Equal(t, advertLen, n)
		require.Equal(t, b[:advertLen], a.appendTo(nil))
	})
}
