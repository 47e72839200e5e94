package rdmap

import (
	"encoding/binary"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// terminateMaxLen is the longest Terminate Header (RFC 5040 §4.8 Figure
// 7): control, segment length, untagged DDP header and RDMA Read Request
// header. The field lengths and the Terminate Control encoder are iwarp's.
const terminateMaxLen = iwarpwire.TerminateControlLen + iwarpwire.TerminateSegLenLen + iwarpwire.DDPUntaggedHeaderLen + readRequestLen

// termHeader is the termHeader Header (RFC 5040 §4.8 Figure 7), following
// the untagged DDP header of a termHeader on QN 2.
//
// The DDP Segment Length field is on the wire when M or D is set; the
// terminated DDP header when D is set (its T bit tells 14 from 18
// octets); the terminated RDMA Read Request header when R is set.
type termHeader struct {
	// Code is the Layer / EType / Error Code.
	Code iwarp.TermCode
	// M: the DDP Segment Length is valid.
	M bool
	// D: the terminated DDP header is included.
	D bool
	// R: the terminated RDMA header (a Read Request header) is included.
	R bool
	// SegmentLen is the DDP Segment Length, sent when M or D.
	SegmentLen uint16
	// DDPHeader is the terminated DDP header, 14 (tagged) or 18 (untagged)
	// octets, sent when D. After parseTermHeader it aliases the parsed
	// buffer.
	DDPHeader []byte
	// RDMAHeader is the terminated Read Request header, sent when R.
	RDMAHeader readRequest
}

// parseTermHeader decodes a Terminate Header from the start of b. It checks
// that every part the HdrCt bits announce is present, that the terminated
// DDP header's length matches its T bit, and rejects R without D (the RDMA
// header can only be located after a DDP header). The reserved bits are
// ignored (RFC 5040 §4.8). Octets after the header are not consumed.
func parseTermHeader(b []byte) (termHeader, int, error) {
	if len(b) < iwarpwire.TerminateControlLen {
		return termHeader{}, 0, truncated("Terminate header", iwarpwire.TerminateControlLen, len(b), iwarp.Term.OperationUnspecified)
	}
	var t termHeader
	t.Code, t.M, t.D, t.R = iwarpwire.DecodeTerminateControl(b)
	n := iwarpwire.TerminateControlLen
	if t.R && !t.D {
		return t, 0, &protocolError{Code: iwarp.Term.OperationUnspecified,
			Reason: "Terminate has R set without D: the RDMA header cannot be located (RFC 5040 §4.8)"}
	}
	if t.M || t.D {
		if len(b) < n+iwarpwire.TerminateSegLenLen {
			return t, 0, truncated("Terminate DDP Segment Length", n+iwarpwire.TerminateSegLenLen, len(b), iwarp.Term.OperationUnspecified)
		}
		t.SegmentLen = binary.BigEndian.Uint16(b[n:])
		n += iwarpwire.TerminateSegLenLen
	}
	if t.D {
		if len(b) < n+1 {
			return t, 0, truncated("Terminated DDP header", n+1, len(b), iwarp.Term.OperationUnspecified)
		}
		hl := iwarpwire.DDPControl(b[n]).HeaderLen() // by the T bit, RFC 5041 §4.1
		if len(b) < n+hl {
			return t, 0, truncated("Terminated DDP header", n+hl, len(b), iwarp.Term.OperationUnspecified)
		}
		t.DDPHeader = b[n : n+hl : n+hl]
		n += hl
	}
	if t.R {
		rr, m, err := parseReadRequest(b[n:])
		if err != nil {
			return t, 0, err
		}
		t.RDMAHeader = rr
		n += m
	}
	return t, n, nil
}

// Append appends the encoded header to b; it does not allocate when b has
// Len octets of spare capacity. Reserved bits are sent as zero.
func (t *termHeader) append(b []byte) []byte {
	b = iwarpwire.AppendTerminateControl(b, t.Code, t.M, t.D, t.R)
	if t.M || t.D {
		b = binary.BigEndian.AppendUint16(b, t.SegmentLen)
	}
	if t.D {
		b = append(b, t.DDPHeader...)
	}
	if t.R {
		b = t.RDMAHeader.append(b)
	}
	return b
}

// Len returns the encoded length.
func (t *termHeader) len() int {
	n := iwarpwire.TerminateControlLen
	if t.M || t.D {
		n += iwarpwire.TerminateSegLenLen
	}
	if t.D {
		n += len(t.DDPHeader)
	}
	if t.R {
		n += readRequestLen
	}
	return n
}

// String summarises the header for logs.
func (t *termHeader) String() string {
	return fmt.Sprintf("Terminate{%v M=%t D=%t R=%t seglen=%d ddp=% x}", t.Code, t.M, t.D, t.R, t.SegmentLen, t.DDPHeader)
}
