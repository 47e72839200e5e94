package capture

import (
	"net/netip"
	"sync"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// maxDataPerChunk is the user data per recorded DATA chunk: one chunk per
// packet within IPv4's length.
const maxDataPerChunk = maxIPPayload - wire.HeaderLen - wire.DataHeaderLen - 3

// Verification tags of a recorded kernel association (any nonzero value
// does; RFC 9260 §8.5).
const (
	tagLocal  = 0x5c7b0001
	tagRemote = 0x5c7b0002
)

// SCTPRecorder records the user messages of one kernel SCTP association
// as IP/SCTP packets (Writer.SCTP). A method, not a func value, so that
// the caller's variadic parts stay on its stack.
type SCTPRecorder struct {
	w             *Writer
	local, remote netip.AddrPort
	mu            sync.Mutex
	tsnOut, tsnIn uint32
	buf           []byte
	msg           []byte // parts joined (under mu)
}

// SCTP returns a recorder for the association between local and remote
// (kernel SCTP, whose packets a process does not see): each call records
// one user message, sent by this side if sent, else received, on stream
// with ppid (host order), given as the concatenation of parts, as one
// DATA chunk of an IP/SCTP packet.
func (w *Writer) SCTP(local, remote netip.AddrPort) *SCTPRecorder {
	l, r := endpoints(local, remote)
	return &SCTPRecorder{w: w, local: l, remote: r, tsnOut: 1, tsnIn: 1}
}

// Record records one user message (see Writer.SCTP).
func (r *SCTPRecorder) Record(sent bool, stream uint16, ppid uint32, unordered bool, parts ...[]byte) {
	r.record(sent, stream, ppid, unordered, parts)
}

func (r *SCTPRecorder) record(out bool, stream uint16, ppid uint32, unordered bool, parts [][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := r.msg[:0]
	for _, p := range parts {
		msg = append(msg, p...)
	}
	r.msg = msg
	src, dst, tag, tsn := r.local, r.remote, uint32(tagRemote), &r.tsnOut
	if !out {
		src, dst, tag, tsn = r.remote, r.local, tagLocal, &r.tsnIn
	}
	first := true
	for {
		k := min(len(msg), maxDataPerChunk)
		d := wire.Data{Unordered: unordered, Beginning: first, Ending: k == len(msg), TSN: *tsn,
			StreamID: stream, PPID: ppid, UserData: msg[:k]}
		*tsn++
		b := r.buf[:0]
		b = wire.AppendHeader(b, wire.Header{SrcPort: src.Port(), DstPort: dst.Port(), VerificationTag: tag})
		b = d.Append(b)
		wire.SetChecksum(b)
		r.buf = b
		r.w.recordIP(src, dst, protoSCTP, b)
		msg = msg[k:]
		first = false
		if len(msg) == 0 {
			return
		}
	}
}
