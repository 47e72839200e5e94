package rdmap

import (
	"encoding/binary"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// atomicRequestLen is the length of the Atomic Operation Request Header
// (RFC 7306 §5.2.1 Figure 4).
const atomicRequestLen = 52

// atomicOp is the 4-bit Atomic Operation Code (RFC 7306 §5.2.1 Figure 5).
type atomicOp uint8

// Atomic Operation Codes of RFC 7306. 0x1 (the draft's unmasked Swap) is
// reserved in the published RFC; an unmasked swap is CmpSwap with a zero
// compare mask and an all-ones swap mask.
const (
	atomicFetchAdd atomicOp = 0x0 // masked FetchAdd, RFC 7306 §5.1.1
	atomicCmpSwap  atomicOp = 0x2 // masked CmpSwap, RFC 7306 §5.1.2
)

// String names the atomic operation.
func (a atomicOp) String() string {
	switch a {
	case atomicFetchAdd:
		return "FetchAdd"
	case atomicCmpSwap:
		return "CmpSwap"
	}
	return fmt.Sprintf("reserved atomic opcode %#x", uint8(a))
}

// Valid reports whether a is defined by RFC 7306 (FetchAdd or CmpSwap).
func (a atomicOp) valid() bool { return a == atomicFetchAdd || a == atomicCmpSwap }

// atomicRequest is the Atomic Operation Request Header (RFC 7306 §5.2.1),
// following the untagged DDP header of an Atomic Request on QN 1.
type atomicRequest struct {
	// Op is the AOpCode (low 4 bits of the first word; the 28 bits above
	// it are reserved: zero on transmit, ignored on receive).
	Op atomicOp
	// ReqID is the Request Identifier, reflected in the response.
	ReqID uint32
	// STag and TO address the 64-bit target at the responder.
	STag uint32
	TO   uint64
	// Data is the Add Data (FetchAdd) or Swap Data (CmpSwap).
	Data uint64
	// Mask is the Add Mask or Swap Mask.
	Mask uint64
	// Compare and CompareMask are used by CmpSwap only.
	Compare     uint64
	CompareMask uint64
}

// parseAtomicRequest decodes an Atomic Request Header from the start of b.
// An AOpCode other than FetchAdd or CmpSwap is an error (RFC 7306 §5.2.1
// rule 4); this implementation reports it as a Remote Operation Error,
// Unexpected OpCode. The parsed header is returned with the error.
func parseAtomicRequest(b []byte) (atomicRequest, int, error) {
	if len(b) < atomicRequestLen {
		return atomicRequest{}, 0, truncated("Atomic Request header", atomicRequestLen, len(b), iwarp.Term.OperationUnspecified)
	}
	a := atomicRequest{
		Op:          atomicOp(b[3] & 0x0f),
		ReqID:       binary.BigEndian.Uint32(b[4:8]),
		STag:        binary.BigEndian.Uint32(b[8:12]),
		TO:          binary.BigEndian.Uint64(b[12:20]),
		Data:        binary.BigEndian.Uint64(b[20:28]),
		Mask:        binary.BigEndian.Uint64(b[28:36]),
		Compare:     binary.BigEndian.Uint64(b[36:44]),
		CompareMask: binary.BigEndian.Uint64(b[44:52]),
	}
	if !a.Op.valid() {
		return a, atomicRequestLen, &protocolError{Code: iwarp.Term.UnexpectedOpcode,
			Reason: fmt.Sprintf("unsupported atomic operation code %#x (RFC 7306 §5.2.1 Figure 5)", uint8(a.Op))}
	}
	return a, atomicRequestLen, nil
}

// Append appends the encoded header to b; it does not allocate when b has
// AtomicRequestLen octets of spare capacity.
func (a *atomicRequest) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(a.Op)&0x0f)
	b = binary.BigEndian.AppendUint32(b, a.ReqID)
	b = binary.BigEndian.AppendUint32(b, a.STag)
	b = binary.BigEndian.AppendUint64(b, a.TO)
	b = binary.BigEndian.AppendUint64(b, a.Data)
	b = binary.BigEndian.AppendUint64(b, a.Mask)
	b = binary.BigEndian.AppendUint64(b, a.Compare)
	return binary.BigEndian.AppendUint64(b, a.CompareMask)
}

// Len returns AtomicRequestLen.
func (a *atomicRequest) Len() int { return atomicRequestLen }

// Apply computes the new value of the target from its original value
// (RFC 7306 §5.1.1 and §5.1.2 pseudocode). For FetchAdd a set bit in Mask
// marks the most significant bit of a field: the carry out of it is
// discarded. For CmpSwap the masked swap happens when the masked compare
// matches.
func (a *atomicRequest) apply(orig uint64) uint64 {
	switch a.Op {
	case atomicFetchAdd:
		return maskedAdd(orig, a.Data, a.Mask)
	case atomicCmpSwap:
		if (a.Compare^orig)&a.CompareMask == 0 {
			return orig&^a.Mask | a.Data&a.Mask
		}
	}
	return orig
}

// maskedAdd adds x and y in independent fields: a set bit in mask ends a
// field, and the carry out of that bit is dropped. With mask 0 it is a
// plain 64-bit addition. The field-wise sum is a carry-less sum plus the
// carries, with the carries out of field tops suppressed: computed with
// the usual "add without carry across boundaries" trick.
func maskedAdd(x, y, mask uint64) uint64 {
	if mask == 0 {
		return x + y
	}
	// Bits just above a field top start a new field. Clear the top bit of
	// every field in both operands, add (carries stop at the top bits),
	// then put the top bits back as a carry-less XOR.
	top := mask
	s := (x &^ top) + (y &^ top)
	return s ^ ((x ^ y) & top)
}
