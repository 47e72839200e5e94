package bench

import (
	"encoding/binary"
	"time"
)

// ReportLen is the length of a Report message.
const ReportLen = 64

const reportMagic = "SRR1"

// Report is the server's last message on a stream (docs/cli.md): its
// verdict and, when it was the active side (FlagReverse), its measurement.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Magic "SRR1"                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Status     |               Reserved (0)                    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Operations (64)  | Octets (64) | Elapsed ns (64)             |
//	|  Latency min, median, p99, max (4 × 64, nanoseconds)          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type Report struct {
	Status  Status
	Ops     uint64
	Bytes   uint64
	Elapsed time.Duration
	Lat     Latency
}

// Len returns ReportLen.
func (r *Report) Len() int { return ReportLen }

// Append appends the encoded message; it allocates nothing when b has
// ReportLen octets of spare capacity.
func (r *Report) Append(b []byte) []byte {
	b = append(b, reportMagic...)
	b = append(b, uint8(r.Status), 0, 0, 0)
	for _, v := range [...]uint64{r.Ops, r.Bytes, uint64(r.Elapsed), uint64(r.Lat.Min), uint64(r.Lat.Median), uint64(r.Lat.P99), uint64(r.Lat.Max)} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

// ParseReport decodes a Report at the start of b.
func ParseReport(b []byte) (Report, int, error) {
	if len(b) < ReportLen {
		return Report{}, 0, malformed("report", "%d octets, want %d", len(b), ReportLen)
	}
	if string(b[:4]) != reportMagic {
		return Report{}, 0, malformed("report", "bad magic %q", b[:4])
	}
	if b[5]|b[6]|b[7] != 0 {
		return Report{}, 0, malformed("report", "reserved octets not zero")
	}
	var v [7]uint64
	for i := range v {
		v[i] = binary.BigEndian.Uint64(b[8+8*i:])
		if v[i] > 1<<63-1 && i >= 2 {
			return Report{}, 0, malformed("report", "duration field %d out of range", i)
		}
	}
	r := Report{Status: Status(b[4]), Ops: v[0], Bytes: v[1], Elapsed: time.Duration(v[2]),
		Lat: Latency{Min: time.Duration(v[3]), Median: time.Duration(v[4]), P99: time.Duration(v[5]), Max: time.Duration(v[6])}}
	if r.Status > statusMax {
		return r, 0, malformed("report", "unknown status %d", r.Status)
	}
	return r, ReportLen, nil
}
