package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReportImage(t *testing.T) {
	img := []byte{'S', 'R', 'R', '3', 0x03, 0, 0, 0}
	for _, v := range []uint64{10, 640, 1000, 1, 2, 3, 4, 5, 6, 7, 8} {
		img = append(img, 0, 0, 0, 0, 0, 0, 0, byte(v>>8))
		img[len(img)-1], img[len(img)-2] = byte(v), byte(v>>8)
	}
	img = append(img, 0x40, 0x24, 0, 0, 0, 0, 0, 0) // BW peak 10.0 (binary64)
	r, n, err := parseReport(img)
	require.NoError(t, err)
	assert.Equal(t, reportLen, n)
	assert.Equal(t, Report{Status: statusVerifyError, Ops: 10, Bytes: 640, Elapsed: 1000,
		Lat: Latency{Min: 1, Median: 2, P99: 3, Max: 4, Mean: 5, Stdev: 6, P999: 7, Count: 8}, PeakGbps: 10}, r)
	assert.Equal(t, img, r.appendTo(nil))
	assert.Equal(t, reportLen, len(r.appendTo(nil)))
}

func TestReportRejects(t *testing.T) {
	good := (&Report{Ops: 1, Elapsed: time.Second}).appendTo(nil)
	mut := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for name, b := range map[string][]byte{
		"truncated": good[:reportLen-1],
		"magic":     mut(func(b []byte) { b[0] = 's' }),
		"reserved":  mut(func(b []byte) { b[7] = 1 }),
		"status":    mut(func(b []byte) { b[4] = byte(statusMax) + 1 }),
		"elapsed":   mut(func(b []byte) { b[24] = 0x80 }),
		"p99.9":     mut(func(b []byte) { b[80] = 0x80 }),
		"peak NaN":  mut(func(b []byte) { copy(b[96:], []byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 1}) }),
		"peak < 0":  mut(func(b []byte) { b[96] = 0xc0 }),
	} {
		_, _, err := parseReport(b)
		assert.ErrorIs(t, err, errMalformed, name)
	}
}

func TestReportAppendNoAlloc(t *testing.T) {
	r := Report{Ops: 5}
	b := make([]byte, 0, reportLen)
	assert.Zero(t, testing.AllocsPerRun(100, func() { b = r.appendTo(b[:0]) }))
}

func FuzzReport(f *testing.F) {
	f.Add((&Report{Ops: 3, Bytes: 9, Elapsed: 5, Lat: Latency{Min: 1, Median: 2, P99: 3, Max: 4, Mean: 2, Stdev: 1, P999: 4, Count: 3}}).appendTo(nil))
	f.Add([]byte("SRR3\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := parseReport(b)
		if err != nil {
			return
		}
		require.Equal(t, reportLen, n)
		require.Equal(t, b[:reportLen], r.appendTo(nil))
	})
}

// A tally's Report is summarised at the end of the run (settle), not when
// its stream ends; encoded before that, it still carries the summary.
func TestReportSettle(t *testing.T) {
	rec := newLatRecorder(true)
	for _, d := range []time.Duration{3 * time.Microsecond, 5 * time.Microsecond, 40 * time.Microsecond} {
		rec.record(d)
	}
	r := Report{Ops: 3, hist: rec}
	assert.Zero(t, r.Lat.Count, "not summarised yet")
	back, _, err := parseReport(r.appendTo(nil))
	require.NoError(t, err)
	assert.Equal(t, rec.summary(), back.Lat, "the encoded Report carries the summary")
	r.settle()
	assert.Equal(t, rec.summary(), r.Lat)
	assert.Equal(t, uint64(3), r.Lat.Count)
	passive := Report{Ops: 3}
	passive.settle()
	assert.Zero(t, passive.Lat, "no histogram: nothing to summarise")
}
