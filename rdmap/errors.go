package rdmap

import (
	"errors"
	"fmt"
)

// Terminate layers (RFC 5040 §4.8 Figure 9, the 4-bit Layer field).
const (
	// LayerRDMA is an error detected by the RDMAP layer.
	LayerRDMA uint8 = 0x0
	// LayerDDP is an error detected by the DDP layer (RFC 5041 §7.2).
	LayerDDP uint8 = 0x1
	// LayerLLP is an error detected by the lower layer protocol (for MPA,
	// RFC 5044 §8 and RFC 6581 §4).
	LayerLLP uint8 = 0x2
)

// RDMA layer error types (RFC 5040 §4.8 Figure 9, the 4-bit EType field).
const (
	// ETypeLocalCatastrophic is a local catastrophic error; it has no code.
	ETypeLocalCatastrophic uint8 = 0x0
	// ETypeRemoteProtection is a remote protection error.
	ETypeRemoteProtection uint8 = 0x1
	// ETypeRemoteOperation is a remote operation error.
	ETypeRemoteOperation uint8 = 0x2
)

// RDMA layer error codes (RFC 5040 §4.8 Figure 9).
const (
	CodeInvalidSTag          uint8 = 0x00 // remote protection: Invalid STag
	CodeBaseBounds           uint8 = 0x01 // remote protection: Base or bounds violation
	CodeAccessRights         uint8 = 0x02 // remote protection: Access rights violation
	CodeSTagNotAssociated    uint8 = 0x03 // remote protection: STag not associated with RDMAP Stream
	CodeTOWrap               uint8 = 0x04 // remote protection: TO wrap
	CodeInvalidVersion       uint8 = 0x05 // remote operation: Invalid RDMAP version
	CodeUnexpectedOpcode     uint8 = 0x06 // remote operation: Unexpected OpCode
	CodeCatastrophicStream   uint8 = 0x07 // remote operation: Catastrophic error, localized to RDMAP Stream
	CodeCatastrophicGlobal   uint8 = 0x08 // remote operation: Catastrophic error, global
	CodeCannotInvalidate     uint8 = 0x09 // remote protection or operation: STag cannot be Invalidated
	CodeUnspecified          uint8 = 0xFF // remote protection or operation: Unspecified Error
	codeLocalCatastrophicNil uint8 = 0x00
)

// TermCode is the Layer / Error Type / Error Code triple of a Terminate
// message (RFC 5040 §4.8 Figures 8 and 9). It represents RDMA layer causes
// (Layer 0), DDP causes (Layer 1, RFC 5041 §7.2, see TermCodeFromDDP) and
// LLP causes (Layer 2, see TermCodeFromLLP). Layer and EType are 4-bit
// values.
type TermCode struct {
	Layer uint8
	EType uint8
	Code  uint8
}

// Every row of RFC 5040 §4.8 Figure 9 for the RDMA layer.
var (
	// TermLocalCatastrophic: RDMA, Local Catastrophic Error (no code).
	TermLocalCatastrophic = TermCode{LayerRDMA, ETypeLocalCatastrophic, codeLocalCatastrophicNil}
	// TermInvalidSTag: RDMA, Remote Protection, Invalid STag (0x00).
	TermInvalidSTag = TermCode{LayerRDMA, ETypeRemoteProtection, CodeInvalidSTag}
	// TermBaseBounds: RDMA, Remote Protection, Base or bounds violation (0x01).
	TermBaseBounds = TermCode{LayerRDMA, ETypeRemoteProtection, CodeBaseBounds}
	// TermAccessRights: RDMA, Remote Protection, Access rights violation (0x02).
	TermAccessRights = TermCode{LayerRDMA, ETypeRemoteProtection, CodeAccessRights}
	// TermSTagNotAssociated: RDMA, Remote Protection, STag not associated
	// with RDMAP Stream (0x03).
	TermSTagNotAssociated = TermCode{LayerRDMA, ETypeRemoteProtection, CodeSTagNotAssociated}
	// TermTOWrap: RDMA, Remote Protection, TO wrap (0x04).
	TermTOWrap = TermCode{LayerRDMA, ETypeRemoteProtection, CodeTOWrap}
	// TermProtectionCannotInvalidate: RDMA, Remote Protection, STag cannot
	// be Invalidated (0x09).
	TermProtectionCannotInvalidate = TermCode{LayerRDMA, ETypeRemoteProtection, CodeCannotInvalidate}
	// TermProtectionUnspecified: RDMA, Remote Protection, Unspecified (0xFF).
	TermProtectionUnspecified = TermCode{LayerRDMA, ETypeRemoteProtection, CodeUnspecified}
	// TermInvalidVersion: RDMA, Remote Operation, Invalid RDMAP version (0x05).
	TermInvalidVersion = TermCode{LayerRDMA, ETypeRemoteOperation, CodeInvalidVersion}
	// TermUnexpectedOpcode: RDMA, Remote Operation, Unexpected OpCode (0x06).
	TermUnexpectedOpcode = TermCode{LayerRDMA, ETypeRemoteOperation, CodeUnexpectedOpcode}
	// TermCatastrophicStream: RDMA, Remote Operation, Catastrophic error
	// localized to RDMAP Stream (0x07).
	TermCatastrophicStream = TermCode{LayerRDMA, ETypeRemoteOperation, CodeCatastrophicStream}
	// TermCatastrophicGlobal: RDMA, Remote Operation, Catastrophic error,
	// global (0x08).
	TermCatastrophicGlobal = TermCode{LayerRDMA, ETypeRemoteOperation, CodeCatastrophicGlobal}
	// TermOperationCannotInvalidate: RDMA, Remote Operation, STag cannot be
	// Invalidated (0x09).
	TermOperationCannotInvalidate = TermCode{LayerRDMA, ETypeRemoteOperation, CodeCannotInvalidate}
	// TermOperationUnspecified: RDMA, Remote Operation, Unspecified (0xFF).
	TermOperationUnspecified = TermCode{LayerRDMA, ETypeRemoteOperation, CodeUnspecified}
)

// DDP layer error types and codes (RFC 5041 §7.2), as carried in a
// Terminate with Layer 1. They mirror package ddp's constants so that this
// file can name them without importing ddp.
var (
	// TermDDPLocalCatastrophic: DDP, Local Catastrophic (type 0, code 0).
	TermDDPLocalCatastrophic = TermCode{LayerDDP, 0x0, 0x00}
	// TermDDPInvalidSTag: DDP, Tagged Buffer Error, Invalid STag.
	TermDDPInvalidSTag = TermCode{LayerDDP, 0x1, 0x00}
	// TermDDPBaseBounds: DDP, Tagged Buffer Error, Base or bounds violation.
	TermDDPBaseBounds = TermCode{LayerDDP, 0x1, 0x01}
	// TermDDPSTagNotAssociated: DDP, Tagged Buffer Error, STag not
	// associated with DDP Stream.
	TermDDPSTagNotAssociated = TermCode{LayerDDP, 0x1, 0x02}
	// TermDDPTOWrap: DDP, Tagged Buffer Error, TO wrap.
	TermDDPTOWrap = TermCode{LayerDDP, 0x1, 0x03}
	// TermDDPTaggedVersion: DDP, Tagged Buffer Error, Invalid DDP version.
	TermDDPTaggedVersion = TermCode{LayerDDP, 0x1, 0x04}
	// TermDDPInvalidQN: DDP, Untagged Buffer Error, Invalid QN.
	TermDDPInvalidQN = TermCode{LayerDDP, 0x2, 0x01}
	// TermDDPNoBuffer: DDP, Untagged Buffer Error, Invalid MSN - no buffer
	// available.
	TermDDPNoBuffer = TermCode{LayerDDP, 0x2, 0x02}
	// TermDDPMSNRange: DDP, Untagged Buffer Error, Invalid MSN - MSN range
	// is not valid.
	TermDDPMSNRange = TermCode{LayerDDP, 0x2, 0x03}
	// TermDDPInvalidMO: DDP, Untagged Buffer Error, Invalid MO.
	TermDDPInvalidMO = TermCode{LayerDDP, 0x2, 0x04}
	// TermDDPMessageTooLong: DDP, Untagged Buffer Error, DDP Message too
	// long for available buffer.
	TermDDPMessageTooLong = TermCode{LayerDDP, 0x2, 0x05}
	// TermDDPUntaggedVersion: DDP, Untagged Buffer Error, Invalid DDP
	// version.
	TermDDPUntaggedVersion = TermCode{LayerDDP, 0x2, 0x06}
)

var rdmaETypeNames = [...]string{
	ETypeLocalCatastrophic: "local catastrophic error",
	ETypeRemoteProtection:  "remote protection error",
	ETypeRemoteOperation:   "remote operation error",
}

var rdmaCodeNames = map[[2]uint8]string{
	{ETypeRemoteProtection, CodeInvalidSTag}:       "invalid STag",
	{ETypeRemoteProtection, CodeBaseBounds}:        "base or bounds violation",
	{ETypeRemoteProtection, CodeAccessRights}:      "access rights violation",
	{ETypeRemoteProtection, CodeSTagNotAssociated}: "STag not associated with RDMAP Stream",
	{ETypeRemoteProtection, CodeTOWrap}:            "TO wrap",
	{ETypeRemoteProtection, CodeCannotInvalidate}:  "STag cannot be invalidated",
	{ETypeRemoteProtection, CodeUnspecified}:       "unspecified error",
	{ETypeRemoteOperation, CodeInvalidVersion}:     "invalid RDMAP version",
	{ETypeRemoteOperation, CodeUnexpectedOpcode}:   "unexpected opcode",
	{ETypeRemoteOperation, CodeCatastrophicStream}: "catastrophic error, localized to RDMAP Stream",
	{ETypeRemoteOperation, CodeCatastrophicGlobal}: "catastrophic error, global",
	{ETypeRemoteOperation, CodeCannotInvalidate}:   "STag cannot be invalidated",
	{ETypeRemoteOperation, CodeUnspecified}:        "unspecified error",
}

var ddpETypeNames = [...]string{
	0x0: "local catastrophic",
	0x1: "tagged buffer error",
	0x2: "untagged buffer error",
	0x3: "LLP error",
}

var ddpCodeNames = map[[2]uint8]string{
	{0x1, 0x00}: "invalid STag",
	{0x1, 0x01}: "base or bounds violation",
	{0x1, 0x02}: "STag not associated with DDP Stream",
	{0x1, 0x03}: "TO wrap",
	{0x1, 0x04}: "invalid DDP version",
	{0x2, 0x01}: "invalid QN",
	{0x2, 0x02}: "invalid MSN - no buffer available",
	{0x2, 0x03}: "invalid MSN - MSN range is not valid",
	{0x2, 0x04}: "invalid MO",
	{0x2, 0x05}: "DDP message too long for available buffer",
	{0x2, 0x06}: "invalid DDP version",
}

// String names the code, for example "RDMA remote protection error: invalid
// STag (0/1/0x00)".
func (c TermCode) String() string {
	num := fmt.Sprintf("(%d/%d/%#02x)", c.Layer, c.EType, c.Code)
	switch c.Layer {
	case LayerRDMA:
		if c.EType == ETypeLocalCatastrophic {
			return "RDMA local catastrophic error " + num
		}
		et := "unknown error type"
		if int(c.EType) < len(rdmaETypeNames) {
			et = rdmaETypeNames[c.EType]
		}
		name, ok := rdmaCodeNames[[2]uint8{c.EType, c.Code}]
		if !ok {
			name = "unknown code"
		}
		return "RDMA " + et + ": " + name + " " + num
	case LayerDDP:
		et := "unknown error type"
		if int(c.EType) < len(ddpETypeNames) {
			et = ddpETypeNames[c.EType]
		}
		if c.EType == 0 {
			return "DDP local catastrophic " + num
		}
		name, ok := ddpCodeNames[[2]uint8{c.EType, c.Code}]
		if !ok {
			name = "unknown code"
		}
		return "DDP " + et + ": " + name + " " + num
	case LayerLLP:
		return "LLP error " + num
	default:
		return "unknown layer " + num
	}
}

// IsRemoteProtection reports whether c is an RDMA layer Remote Protection
// Error: for these RFC 5040 §4.8 Figure 10 includes the RDMA header of a
// terminated Read Request.
func (c TermCode) IsRemoteProtection() bool {
	return c.Layer == LayerRDMA && c.EType == ETypeRemoteProtection
}

// Sentinel errors. The engine wraps them; test with errors.Is.
var (
	// ErrFlushed marks the completion of a work request that was still
	// posted when the Endpoint entered the error state (Terminate sent or
	// received, LLP failure, or Close). RFC 5040 §5.4, §6.2.1: "the state of
	// all outstanding RDMA Messages is indeterminate and the Messages SHOULD
	// be considered Completed in error".
	ErrFlushed = errors.New("rdmap: work request flushed")
	// ErrClosed reports use of an Endpoint, MR or PD after it was closed,
	// deregistered or deallocated.
	ErrClosed = errors.New("rdmap: closed")
	// ErrQueueFull reports a post to a full send or receive queue.
	ErrQueueFull = errors.New("rdmap: work queue full")
	// ErrNotStarted reports a post or wait on an Endpoint not yet started.
	ErrNotStarted = errors.New("rdmap: endpoint not started")
	// ErrInvalidWR reports a malformed work request (bad opcode, missing
	// buffer, wrong immediate length, MR of another PD, ...).
	ErrInvalidWR = errors.New("rdmap: invalid work request")
	// ErrCQOverflow reports that a completion queue overflowed (RFC 5040
	// §8.1.1 item 10). No completion is dropped: the ones beyond the depth
	// are kept and every Endpoint feeding the CQ is terminated.
	ErrCQOverflow = errors.New("rdmap: completion queue overflow")
	// ErrTruncated reports a header shorter than its fixed length.
	ErrTruncated = errors.New("rdmap: header truncated")
	// ErrAccess reports a local protection violation (MR access rights,
	// bounds, invalid or deregistered MR) detected when posting.
	ErrAccess = errors.New("rdmap: local protection error")
	// ErrPeerClosed reports that the peer tore the stream down gracefully
	// while work requests were outstanding.
	ErrPeerClosed = errors.New("rdmap: peer closed the stream")
)

// ProtocolError is a malformed or invalid RDMAP header found by a wire
// decoder, with the Terminate code the receiver reports for it.
type ProtocolError struct {
	// Code is the Terminate code this error maps to.
	Code TermCode
	// Reason describes the violated rule.
	Reason string
	// Err is an underlying sentinel such as ErrTruncated, if any.
	Err error
}

// Error implements error.
func (e *ProtocolError) Error() string {
	s := "rdmap: " + e.Reason + " [" + e.Code.String() + "]"
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying sentinel.
func (e *ProtocolError) Unwrap() error { return e.Err }

func truncated(what string, need, have int, code TermCode) error {
	return &ProtocolError{
		Code:   code,
		Reason: fmt.Sprintf("%s needs %d octets, have %d", what, need, have),
		Err:    ErrTruncated,
	}
}

// TerminateError is the error a user sees after an RDMAP Abortive
// Termination (RFC 5040 §6.2.1, §7.1): either a Terminate this Endpoint sent
// because it detected an error (Remote false), or one it received from the
// peer (Remote true). The header copies are those carried in (or sent in)
// the Terminate message (RFC 5040 §4.8 Figure 10).
type TerminateError struct {
	// Code is the Layer / EType / Error Code.
	Code TermCode
	// Remote is true when the Terminate was received from the peer.
	Remote bool
	// SegmentLen is the DDP Segment Length field, if HasSegmentLen.
	SegmentLen    uint16
	HasSegmentLen bool
	// DDPHeader is the terminated DDP header (14 or 18 octets), if any.
	DDPHeader []byte
	// RDMAHeader is the terminated RDMA Read Request header, if any.
	RDMAHeader *ReadRequest
	// Err is the local cause (for a Terminate sent), or a parse error of a
	// malformed received Terminate; nil otherwise.
	Err error
}

// Error implements error.
func (e *TerminateError) Error() string {
	dir := "sent"
	if e.Remote {
		dir = "received"
	}
	s := "rdmap: terminate " + dir + ": " + e.Code.String()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *TerminateError) Unwrap() error { return e.Err }
