package bench

import (
	"encoding/binary"
	"math"
	"time"
)

// reportLen is the length of a Report message.
const reportLen = 104

const reportMagic = "SRR3"

// Report is the server's last message on a stream (its layout is in
// docs/cli.md): its verdict and, when it was the active side (Reverse),
// its measurement.
type Report struct {
	Status  Status
	Ops     uint64
	Bytes   uint64
	Elapsed time.Duration
	Lat     Latency
	// PeakGbps is the BW peak of the active side's run (bench/peak.go),
	// 0 when not measured.
	PeakGbps float64

	// hist is the histogram behind Lat when this host measured (not
	// encoded), so that streams aggregate by merging histograms.
	hist *latRecorder
	// times are the operations' post and completion times when this host
	// measured the peak bandwidth (not encoded).
	times *peakTimes
}

// settle fills Lat from the histogram the Report was measured into, if
// it was not summarised yet (tally.report leaves it to the end of the run).
func (r *Report) settle() {
	if r.Lat.Count == 0 && r.hist != nil {
		r.Lat = r.hist.summary()
	}
}

// appendTo appends the encoded message; it allocates nothing when b has
// reportLen octets of spare capacity.
func (r *Report) appendTo(b []byte) []byte {
	b = append(b, reportMagic...)
	b = append(b, uint8(r.Status), 0, 0, 0)
	l := &r.Lat
	if l.Count == 0 && r.hist != nil {
		s := r.hist.summary()
		l = &s
	}
	peak := r.PeakGbps
	if peak == 0 && r.times != nil && r.Ops > 0 {
		peak = peakGbps([]StreamResult{{Report: *r}}, r.Bytes/r.Ops)
	}
	for _, v := range [...]uint64{r.Ops, r.Bytes, uint64(r.Elapsed), uint64(l.Min), uint64(l.Median), uint64(l.P99), uint64(l.Max),
		uint64(l.Mean), uint64(l.Stdev), uint64(l.P999), l.Count, math.Float64bits(peak)} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

// parseReport decodes a Report at the start of b.
func parseReport(b []byte) (Report, int, error) {
	if len(b) < reportLen {
		return Report{}, 0, malformed("report", "%d octets, want %d", len(b), reportLen)
	}
	if string(b[:4]) != reportMagic {
		return Report{}, 0, malformed("report", "bad magic %q", b[:4])
	}
	if b[5]|b[6]|b[7] != 0 {
		return Report{}, 0, malformed("report", "reserved octets not zero")
	}
	var v [12]uint64
	for i := range v {
		v[i] = binary.BigEndian.Uint64(b[8+8*i:])
		if v[i] > 1<<63-1 && i >= 2 && i <= 9 {
			return Report{}, 0, malformed("report", "duration field %d out of range", i)
		}
	}
	r := Report{Status: Status(b[4]), Ops: v[0], Bytes: v[1], Elapsed: time.Duration(v[2]),
		Lat: Latency{Min: time.Duration(v[3]), Median: time.Duration(v[4]), P99: time.Duration(v[5]), Max: time.Duration(v[6]),
			Mean: time.Duration(v[7]), Stdev: time.Duration(v[8]), P999: time.Duration(v[9]), Count: v[10]},
		PeakGbps: math.Float64frombits(v[11])}
	if p := r.PeakGbps; math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
		return r, 0, malformed("report", "BW peak %v out of range", p)
	}
	if r.Status > statusMax {
		return r, 0, malformed("report", "unknown status %d", r.Status)
	}
	return r, reportLen, nil
}
