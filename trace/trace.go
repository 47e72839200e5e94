// Package trace writes a protocol trace people can read and plot: one JSON
// object per line (JSON lines, in the spirit of qlog), with the
// association's events of sctp-native (each SACK with the window and RTO
// after it, T3-rtx expiries, the end) and each stream's end (a Terminate
// sent or received, RFC 5040 §6.2.1, or a close). transport.Options.Trace
// and the CLI's --trace FILE turn it on; Parse reads a trace back
// (docs/trace.md shows a plot made from one).
//
// Every record has "t" (milliseconds since the Writer was made) and
// "event"; the other fields are those of the event (Record).
package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/tracing"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// Event names of the records.
const (
	eventSACK      = "sctp:sack"      // a SACK applied (RFC 9260 §6.2.1, §7.2)
	eventT3Expiry  = "sctp:t3_expiry" // T3-rtx expired (RFC 9260 §6.3.3)
	eventClosed    = "sctp:closed"    // the association ended
	eventTerminate = "rdmap:terminate"
	eventStreamEnd = "rdmap:stream_end"
)

// Writer writes records to an io.Writer, buffered; it is a tracing.Tracer.
// Its methods are safe for concurrent use; a record is never split. Writing
// an SCTP event allocates nothing. Close flushes.
type Writer struct {
	mu    sync.Mutex
	w     *bufio.Writer
	start time.Time
	line  []byte
	err   error
}

// New returns a Writer to w; times count from now.
func New(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10), start: time.Now(), line: make([]byte, 0, 512)}
}

var _ tracing.Tracer = (*Writer)(nil)

// Event writes one association event (tracing.Tracer).
func (w *Writer) Event(e tracing.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.begin(e.Time, eventName(e.Kind))
	b = appendHex(b, "assoc", e.LocalTag)
	b = appendInt(b, "cwnd", int64(e.Cwnd))
	b = appendInt(b, "ssthresh", int64(e.SSThresh))
	b = appendInt(b, "flight", int64(e.Flight))
	b = appendMs(b, "srtt_ms", e.SRTT)
	b = appendMs(b, "rto_ms", e.RTO)
	switch e.Kind {
	case tracing.EventSACK:
		b = appendInt(b, "cum_tsn", int64(e.CumTSN))
		b = appendInt(b, "gaps", int64(e.Gaps))
		b = appendInt(b, "dups", int64(e.Dups))
		b = appendInt(b, "a_rwnd", int64(e.ARwnd))
		b = appendInt(b, "acked", int64(e.Acked))
		b = appendInt(b, "marked", int64(e.Marked))
		if e.FastRetransmit {
			b = append(b, `,"fast_retransmit":true`...)
		}
	case tracing.EventT3Expiry:
		b = appendInt(b, "marked", int64(e.Marked))
	case tracing.EventClosed:
		if e.Err != nil {
			b = appendString(b, "error", e.Err.Error())
		}
	}
	w.end(b)
}

// StreamEnded writes the end of a stream: a Terminate sent or received
// (eventTerminate, with its layer/type/code) or another end
// (eventStreamEnd, with the error; none for a local graceful close).
func (w *Writer) StreamEnded(info llp.Info, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var te *rdmap.TerminateError
	name := eventStreamEnd
	if errors.As(err, &te) {
		name = eventTerminate
	}
	b := w.begin(time.Now(), name)
	b = appendString(b, "llp", info.Kind)
	b = appendInt(b, "stream", int64(info.StreamID))
	if info.RemoteAddr != "" {
		b = appendString(b, "peer", info.RemoteAddr)
	}
	if te != nil {
		dir := "sent"
		if te.Remote {
			dir = "received"
		}
		b = appendString(b, "dir", dir)
		b = appendString(b, "code", te.Code.String())
	}
	if err != nil && !errors.Is(err, rdmap.ErrClosed) {
		b = appendString(b, "error", err.Error())
	}
	w.end(b)
}

// Close flushes what is buffered and returns the first write error.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.w.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

func eventName(k tracing.EventKind) string {
	switch k {
	case tracing.EventSACK:
		return eventSACK
	case tracing.EventT3Expiry:
		return eventT3Expiry
	case tracing.EventClosed:
		return eventClosed
	}
	return "sctp:" + k.String()
}

// begin starts a record in w.line. mu is held.
func (w *Writer) begin(at time.Time, name string) []byte {
	b := append(w.line[:0], `{"t":`...)
	b = strconv.AppendFloat(b, float64(at.Sub(w.start).Microseconds())/1000, 'f', 3, 64)
	b = append(b, `,"event":"`...)
	b = append(b, name...)
	return append(b, '"')
}

// end finishes the record and writes it. mu is held.
func (w *Writer) end(b []byte) {
	b = append(b, '}', '\n')
	w.line = b[:0]
	if _, err := w.w.Write(b); err != nil && w.err == nil {
		w.err = err
	}
}

func appendKey(b []byte, k string) []byte {
	b = append(b, `,"`...)
	b = append(b, k...)
	return append(b, `":`...)
}

func appendInt(b []byte, k string, v int64) []byte {
	return strconv.AppendInt(appendKey(b, k), v, 10)
}

func appendMs(b []byte, k string, d time.Duration) []byte {
	return strconv.AppendFloat(appendKey(b, k), float64(d.Microseconds())/1000, 'f', 3, 64)
}

func appendHex(b []byte, k string, v uint32) []byte {
	b = append(appendKey(b, k), '"')
	const digits = "0123456789abcdef"
	for i := 28; i >= 0; i -= 4 {
		b = append(b, digits[v>>uint(i)&0xF])
	}
	return append(b, '"')
}

// appendString appends a JSON string (encoding/json's escaping).
func appendString(b []byte, k, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(appendKey(b, k), q...)
}
