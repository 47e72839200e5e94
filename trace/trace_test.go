package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/tracing"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// TestWriterRecords: every event becomes one JSON object on its own line
// with its fields, and Parse reads them back.
func TestWriterRecords(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf)
	at := w.start.Add(1500 * time.Microsecond)
	w.Event(tracing.Event{Kind: tracing.EventSACK, Time: at, LocalTag: 0xdeadbeef, Cwnd: 4380, SSThresh: 1 << 20, Flight: 1200,
		SRTT: 250 * time.Microsecond, RTO: time.Second, CumTSN: 77, Gaps: 2, Dups: 1, ARwnd: 65536, Acked: 1200, Marked: 600,
		FastRetransmit: true})
	w.Event(tracing.Event{Kind: tracing.EventT3Expiry, Time: at, LocalTag: 1, Cwnd: 1500, RTO: 2 * time.Second, Marked: 9000})
	w.Event(tracing.Event{Kind: tracing.EventClosed, Time: at, LocalTag: 1, Err: errors.New(`peer "gone"` + "\n")})
	w.StreamEnded(llp.Info{Kind: "sctp-native", StreamID: 3, RemoteAddr: "127.0.0.1:9"},
		fmt.Errorf("x: %w", &rdmap.TerminateError{Code: iwarp.Term.InvalidSTag, Remote: true}))
	w.StreamEnded(llp.Info{Kind: "mpa"}, rdmap.ErrPeerClosed)
	w.StreamEnded(llp.Info{Kind: "mpa"}, rdmap.ErrClosed)
	require.NoError(t, w.Close())

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 6)
	for _, l := range lines {
		assert.True(t, json.Valid([]byte(l)), "valid JSON: %s", l)
	}
	recs, err := Parse(&buf)
	require.NoError(t, err)
	require.Len(t, recs, 6)
	assert.Equal(t, Record{T: 1.5, Event: eventSACK, Assoc: "deadbeef", Cwnd: 4380, SSThresh: 1 << 20, Flight: 1200,
		SRTTms: 0.25, RTOms: 1000, CumTSN: 77, Gaps: 2, Dups: 1, ARwnd: 65536, Acked: 1200, Marked: 600, FastRetransmit: true}, recs[0])
	assert.Equal(t, Record{T: 1.5, Event: eventT3Expiry, Assoc: "00000001", Cwnd: 1500, RTOms: 2000, Marked: 9000}, recs[1])
	assert.Equal(t, eventClosed, recs[2].Event)
	assert.Equal(t, `peer "gone"`+"\n", recs[2].Error)
	assert.Equal(t, eventTerminate, recs[3].Event)
	assert.Equal(t, "received", recs[3].Dir)
	assert.Equal(t, 3, recs[3].Stream)
	assert.Equal(t, "127.0.0.1:9", recs[3].Peer)
	assert.Contains(t, recs[3].Code, "invalid STag")
	assert.Equal(t, Record{T: recs[4].T, Event: eventStreamEnd, LLP: "mpa", Error: rdmap.ErrPeerClosed.Error()}, recs[4])
	assert.Empty(t, recs[5].Error, "a local close is no error")
}

// TestWriterEventAllocs: an SCTP event costs no allocation once the
// Writer's buffers exist (it runs with the association's lock held, on
// every SACK).
func TestWriterEventAllocs(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf)
	e := tracing.Event{Kind: tracing.EventSACK, Time: time.Now(), Cwnd: 100000, SRTT: time.Millisecond, FastRetransmit: true}
	w.Event(e)
	allocs := testing.AllocsPerRun(1000, func() {
		buf.Reset()
		w.Event(e)
	})
	assert.Zero(t, allocs)
}

// TestParseErrors: a line that is not a record names its line number.
func TestParseErrors(t *testing.T) {
	_, err := Parse(strings.NewReader("{\"t\":1,\"event\":\"x\"}\n\nnot json\n"))
	require.ErrorContains(t, err, "line 3")
	_, err = Parse(strings.NewReader(`{"t":1}`))
	require.ErrorContains(t, err, `no "event"`)
	_, err = Parse(strings.NewReader(strings.Repeat("x", maxLine+1)))
	require.Error(t, err, "an over-long line")
}

// FuzzParse: Parse never panics, and what it accepts it reads again the
// same after a round trip through JSON.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"t":1.5,"event":"sctp:sack","cwnd":4380,"fast_retransmit":true}` + "\n"))
	f.Add([]byte(`{"t":0,"event":"rdmap:terminate","dir":"sent","code":"x"}`))
	f.Add([]byte("\n\n{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := Parse(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		for _, r := range recs {
			line, err := json.Marshal(r)
			require.NoError(t, err)
			out.Write(line)
			out.WriteByte('\n')
		}
		again, err := Parse(&out)
		require.NoError(t, err)
		require.Equal(t, recs, again)
	})
}
