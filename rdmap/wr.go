package rdmap

import (
	"fmt"
	"math"
)

// WorkType names the operation of a work request and of its completion.
type WorkType uint8

// Send queue work types (RFC 5040 §3.2, RFC 7306 §5, §6) and the receive
// completion types.
const (
	// WRSend is a Send (opcode 0x3); SendWR.Solicited selects Send with
	// Solicited Event (0x5), SendWR.Invalidate Send with Invalidate (0x4),
	// both Send with SE and Invalidate (0x6).
	WRSend WorkType = iota + 1
	// WRWrite is an RDMA Write (0x0).
	WRWrite
	// WRWriteImm is an RDMA Write followed by an Immediate Data message
	// (RFC 7306 §6: "Write with Immediate"); Solicited selects Immediate
	// Data with SE. It completes once both messages were handed to DDP.
	WRWriteImm
	// WRRead is an RDMA Read (Read Request 0x1, Read Response 0x2).
	WRRead
	// WRFetchAdd is an Atomic FetchAdd (RFC 7306 §5.1.1).
	WRFetchAdd
	// WRCmpSwap is an Atomic CmpSwap (RFC 7306 §5.1.2). A plain swap is a
	// CmpSwap with CompareMask 0 and SwapMask all ones.
	WRCmpSwap
	// WRImmediate is an Immediate Data message (0x8); with Solicited set,
	// Immediate Data with SE (0x9).
	WRImmediate
	// WRRecv is the completion of a receive work request consumed by a
	// Send of any kind.
	WRRecv
	// wrRecvImm is the completion of a receive work request consumed by an
	// Immediate Data message (RFC 7306 §6.3): Imm holds the data.
	wrRecvImm
)

var workNames = [...]string{
	WRSend:  "Send",
	WRWrite: "Write", WRWriteImm: "WriteImm", WRRead: "Read", WRFetchAdd: "FetchAdd",
	WRCmpSwap: "CmpSwap", WRImmediate: "Immediate", WRRecv: "Recv", wrRecvImm: "RecvImm",
}

// String names the work type.
func (w WorkType) String() string {
	if int(w) < len(workNames) && workNames[w] != "" {
		return workNames[w]
	}
	return fmt.Sprintf("WorkType(%d)", uint8(w))
}

// SendWR is a send queue work request.
//
// Buffer ownership: Local (the source of Sends and Writes) is read while the
// request is processed and must not be modified until it completes
// (RFC 5040 §5.5 rule 8). The sink of a Read is a registered MR with
// LocalWrite access (Sink, SinkOffset): the Read Response is placed there
// by tagged placement, like on a hardware RNIC. The original value of an
// Atomic Operation is returned in Completion.Orig.
type SendWR struct {
	// ID is returned in the completion.
	ID uint64
	// Op selects the operation.
	Op WorkType
	// Local is the payload of a Send or Write.
	Local []byte
	// Invalidate makes a Send a Send with Invalidate of the peer's STag
	// InvalidateSTag (RFC 5040 §5.3).
	Invalidate     bool
	InvalidateSTag uint32
	// RemoteSTag and RemoteTO address the remote buffer of a Write, Read
	// or Atomic Operation.
	RemoteSTag uint32
	RemoteTO   uint64
	// Imm is the Immediate Data of WRWriteImm and WRImmediate.
	Imm uint64
	// Solicited selects the SE variant of WRSend, WRWriteImm and
	// WRImmediate.
	Solicited bool
	// Sink, SinkOffset and Length describe the local sink of a Read. Sink
	// may be nil for a zero-length Read.
	Sink       *MR
	SinkOffset uint64
	Length     uint32
	// Add and AddMask are the FetchAdd operands, Compare, CompareMask,
	// Swap and SwapMask the CmpSwap ones: plain values, which the request
	// carries big-endian (RFC 7306 §5.1). The responder applies them to
	// its 8 octets in its host byte order (binary.NativeEndian, "the endian
	// format of the target memory"; MR.Uint64 reads them so) and
	// Completion.Orig is the value it found. RemoteTO must be a multiple of
	// 8 (ErrInvalidWR otherwise, before anything is sent).
	Add, AddMask                         uint64
	Compare, CompareMask, Swap, SwapMask uint64
	// Inline copies Local when the request is posted, so the caller may
	// reuse the buffer as soon as PostSend returns, before the completion
	// (the verbs' IBV_SEND_INLINE, perftest's -I). Sends, Writes and
	// Writes with Immediate of at most 256 octets only (ErrInvalidWR
	// beyond).
	Inline bool
	// Unsignaled asks for no completion when the request succeeds (a
	// work request posted without the verbs' IBV_SEND_SIGNALED): it
	// still takes its place in the submission order (RFC 5040 §5.5 rule
	// 15), so a later completion tells that it, too, is done, and one
	// that fails or is flushed completes with its error as any other
	// does — nothing posted is lost silently. A ping-pong or a stream of
	// small Sends saves a completion per message this way (perftest
	// signals only every cq_mod-th request). Ignored by Endpoint.Do,
	// which waits for the completion.
	Unsignaled bool
}

// maxInline is the largest payload a SendWR may carry Inline.
const maxInline = 256

// recvWR is a receive work request: a buffer posted on queue 0 that one
// Send or Immediate Data message consumes (RFC 5040 §5.3, RFC 7306 §6.3).
type recvWR struct {
	// ID is returned in the completion.
	ID uint64
	// Buf receives the message; a longer message is a DDP error (RFC 5041
	// §7.2 "DDP Message too long for available buffer").
	Buf []byte
}

// Completion reports the end of a work request.
type Completion struct {
	// WRID is the ID of the work request.
	WRID uint64
	// Op is the work request's type; WRRecv for receives (Imm and
	// HasImm tell a received Immediate Data message).
	Op WorkType
	// Err is nil on success. It wraps ErrFlushed (and the cause) for a
	// request still posted when the endpoint left the running state.
	Err error
	// Length is the number of octets transferred: the Send's length at the
	// receiver, the payload length of Sends, Writes and Reads at the
	// sender, 0 for Immediate Data and atomics.
	Length int
	// Imm and HasImm carry received Immediate Data.
	Imm    uint64
	HasImm bool
	// InvalidatedSTag is the local STag invalidated by a received Send with
	// Invalidate (0 if none).
	InvalidatedSTag uint32
	// Solicited is set for a received Send with SE or Immediate Data with
	// SE (RFC 5040 §5.3: the Data Sink may generate an Event).
	Solicited bool
	// Orig is the Original Remote Data Value of an Atomic Operation: the
	// value the target's 8 octets held, read in the target's host byte
	// order (RFC 7306 §5.1.1).
	Orig uint64
	// Buf is the buffer posted with Endpoint.PostRecv for
	// receives, flushed ones too, so that it can be posted again; the
	// message is Buf[:Length]. nil for send completions.
	Buf []byte
}

func (wr *SendWR) validate() error {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("%w: %v: %s", ErrInvalidWR, wr.Op, fmt.Sprintf(f, a...))
	}
	switch wr.Op {
	case WRSend, WRWrite, WRWriteImm:
		if uint64(len(wr.Local)) > math.MaxUint32 {
			return bad("%d octets exceed 2^32-1", len(wr.Local))
		}
		if (wr.Op == WRWrite || wr.Op == WRWriteImm) && wr.RemoteTO > math.MaxUint64-uint64(len(wr.Local)) {
			return bad("remote TO %#x + %d wraps", wr.RemoteTO, len(wr.Local))
		}
		if wr.Inline && len(wr.Local) > maxInline {
			return bad("%d octets inline, at most %d", len(wr.Local), maxInline)
		}
	case WRRead:
		if wr.Sink == nil && wr.Length != 0 {
			return bad("no sink MR")
		}
		if wr.RemoteTO > math.MaxUint64-uint64(wr.Length) {
			return bad("remote TO %#x + %d wraps", wr.RemoteTO, wr.Length)
		}
	case WRFetchAdd, WRCmpSwap:
		if wr.RemoteTO%8 != 0 {
			return fmt.Errorf("%w: %w: %v: remote TO %#x is not a multiple of 8 (RFC 7306 §5.1: an atomic targets a 64-bit aligned address)",
				ErrInvalidWR, errUnaligned, wr.Op, wr.RemoteTO)
		}
	case WRImmediate:
	default:
		return fmt.Errorf("%w: unknown work type %d", ErrInvalidWR, uint8(wr.Op))
	}
	if wr.Inline {
		switch wr.Op {
		case WRSend, WRWrite, WRWriteImm:
		default:
			return bad("only Sends and Writes carry inline data")
		}
	}
	return nil
}
