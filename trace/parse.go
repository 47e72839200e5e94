package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Record is one line of a trace, as Parse reads it. Fields an event does
// not have are zero.
type Record struct {
	T float64 `json:"t"` // ms since the trace began
	// Event names the record: "sctp:sack", "sctp:t3_expiry", "sctp:closed"
	// (sctp-native's association events), "rdmap:terminate" or
	// "rdmap:stream_end" (a stream's end); docs/trace.md has the fields.
	Event string `json:"event"`
	// Association events.
	Assoc          string  `json:"assoc,omitempty"`
	Cwnd           int64   `json:"cwnd,omitempty"`
	SSThresh       int64   `json:"ssthresh,omitempty"`
	Flight         int64   `json:"flight,omitempty"`
	SRTTms         float64 `json:"srtt_ms,omitempty"`
	RTOms          float64 `json:"rto_ms,omitempty"`
	CumTSN         uint32  `json:"cum_tsn,omitempty"`
	Gaps           int     `json:"gaps,omitempty"`
	Dups           int     `json:"dups,omitempty"`
	ARwnd          uint32  `json:"a_rwnd,omitempty"`
	Acked          int64   `json:"acked,omitempty"`
	Marked         int64   `json:"marked,omitempty"`
	FastRetransmit bool    `json:"fast_retransmit,omitempty"`
	// Stream events.
	LLP    string `json:"llp,omitempty"`
	Stream int    `json:"stream,omitempty"`
	Peer   string `json:"peer,omitempty"`
	Dir    string `json:"dir,omitempty"`
	Code   string `json:"code,omitempty"`
	Error  string `json:"error,omitempty"`
}

// maxLine bounds one record: a line longer than this is an error.
const maxLine = 64 << 10

// Parse reads a trace: one JSON object per line, blank lines ignored. A
// line that is not an object with "event" is an error naming its number.
func Parse(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	var out []Record
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return out, fmt.Errorf("trace: line %d: %w", n, err)
		}
		if rec.Event == "" {
			return out, fmt.Errorf("trace: line %d: no \"event\"", n)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("trace: %w", err)
	}
	return out, nil
}
