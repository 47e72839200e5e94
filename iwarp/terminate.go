package iwarp

import "fmt"

// Terminate layers: the 4-bit Layer field of the RDMAP Terminate Control
// (RFC 5040 §4.8, Figure 9).
const (
	// LayerRDMA is an error detected by the RDMAP layer.
	LayerRDMA uint8 = 0x0
	// LayerDDP is an error detected by the DDP layer (RFC 5041 §7.2).
	LayerDDP uint8 = 0x1
	// LayerLLP is an error detected by the lower layer protocol (for MPA,
	// RFC 5044 §8 and RFC 6581 §8).
	LayerLLP uint8 = 0x2
)

// RDMA layer error types (RFC 5040 §4.8 Figure 9, the 4-bit EType field).
const (
	// RDMAETypeLocalCatastrophic is a local catastrophic error; it has no
	// code (sent as 0).
	RDMAETypeLocalCatastrophic uint8 = 0x0
	// RDMAETypeRemoteProtection is a remote protection error.
	RDMAETypeRemoteProtection uint8 = 0x1
	// RDMAETypeRemoteOperation is a remote operation error.
	RDMAETypeRemoteOperation uint8 = 0x2
)

// RDMA layer error codes (RFC 5040 §4.8 Figure 9).
const (
	RDMACodeInvalidSTag        uint8 = 0x00 // remote protection: Invalid STag
	RDMACodeBaseBounds         uint8 = 0x01 // remote protection: Base or bounds violation
	RDMACodeAccessRights       uint8 = 0x02 // remote protection: Access rights violation
	RDMACodeSTagNotAssociated  uint8 = 0x03 // remote protection: STag not associated with RDMAP Stream
	RDMACodeTOWrap             uint8 = 0x04 // remote protection: TO wrap
	RDMACodeInvalidVersion     uint8 = 0x05 // remote operation: Invalid RDMAP version
	RDMACodeUnexpectedOpcode   uint8 = 0x06 // remote operation: Unexpected OpCode
	RDMACodeCatastrophicStream uint8 = 0x07 // remote operation: Catastrophic error, localized to RDMAP Stream
	RDMACodeCatastrophicGlobal uint8 = 0x08 // remote operation: Catastrophic error, global
	RDMACodeCannotInvalidate   uint8 = 0x09 // remote protection or operation: STag cannot be Invalidated
	RDMACodeUnspecified        uint8 = 0xFF // remote protection or operation: Unspecified Error
)

// DDPErrorType is the 4-bit DDP Error Type of RFC 5041 §7.2, carried as the
// EType of a Terminate with Layer 1.
type DDPErrorType uint8

// DDP Error Types, RFC 5041 §7.2.
const (
	// DDPTypeLocalCatastrophic (0x0) is a catastrophic error local to the
	// receiving endpoint; its only code is DDPCodeLocalCatastrophic.
	DDPTypeLocalCatastrophic DDPErrorType = 0x0
	// DDPTypeTagged (0x1) is a Tagged Buffer error.
	DDPTypeTagged DDPErrorType = 0x1
	// DDPTypeUntagged (0x2) is an Untagged Buffer error.
	DDPTypeUntagged DDPErrorType = 0x2
	// DDPTypeLLP (0x3) is reserved for use by the LLP (RFC 5041 §7.2); the
	// DDP layer itself never produces it.
	DDPTypeLLP DDPErrorType = 0x3
)

// DDP Error Codes, RFC 5041 §7.2 (the §7.1 checks they report in comments).
const (
	// DDPCodeLocalCatastrophic (type 0x0, code 0x00).
	DDPCodeLocalCatastrophic uint8 = 0x00

	// DDPCodeInvalidSTag (tagged, 0x00): Invalid STag (§7.1 tagged check 1).
	DDPCodeInvalidSTag uint8 = 0x00
	// DDPCodeBaseBounds (tagged, 0x01): Base or bounds violation (checks 3, 4).
	DDPCodeBaseBounds uint8 = 0x01
	// DDPCodeSTagNotAssociated (tagged, 0x02): STag not associated with DDP
	// Stream (checks 1, 2; RFC 5041 §8.2).
	DDPCodeSTagNotAssociated uint8 = 0x02
	// DDPCodeTOWrap (tagged, 0x03): TO wrap (check 5).
	DDPCodeTOWrap uint8 = 0x03
	// DDPCodeTaggedVersion (tagged, 0x04): Invalid DDP version (§4.1 DV).
	DDPCodeTaggedVersion uint8 = 0x04

	// DDPCodeInvalidQN (untagged, 0x01): Invalid QN (untagged check 1).
	DDPCodeInvalidQN uint8 = 0x01
	// DDPCodeNoBuffer (untagged, 0x02): Invalid MSN - no buffer available
	// (check 2).
	DDPCodeNoBuffer uint8 = 0x02
	// DDPCodeMSNRange (untagged, 0x03): Invalid MSN - MSN range is not
	// valid (check 5).
	DDPCodeMSNRange uint8 = 0x03
	// DDPCodeInvalidMO (untagged, 0x04): Invalid MO (check 3).
	DDPCodeInvalidMO uint8 = 0x04
	// DDPCodeMessageTooLong (untagged, 0x05): DDP Message too long for
	// available buffer (check 4).
	DDPCodeMessageTooLong uint8 = 0x05
	// DDPCodeUntaggedVersion (untagged, 0x06): Invalid DDP version.
	DDPCodeUntaggedVersion uint8 = 0x06
)

// LLP error type and codes of MPA (layer 2). RFC 6581 §8 fixes the error
// type for MPA at 0x0; the IANA "MPA Errors" registry (RFC 6580 §3.3,
// RFC 6581 §11) holds the codes: 0x01-0x04 from RFC 5044 §8, 0x05-0x07 from
// RFC 6581 §8. RFC 6581 uses codes 6 and 7 over SCTP as well (§9.1, §9.2:
// "the TERM message MUST contain Layer 2, Error Type 0, Error Code 6").
const (
	// LLPETypeMPA is the Terminate error type of MPA errors.
	LLPETypeMPA uint8 = 0x0

	// MPACodeConnectionLost: TCP connection closed, terminated, or lost,
	// including by timeout, too many retries, RST or FIN (RFC 5044 §8).
	MPACodeConnectionLost uint8 = 0x01
	// MPACodeCRC: received MPA CRC does not match the calculated value for
	// the FPDU (RFC 5044 §8).
	MPACodeCRC uint8 = 0x02
	// MPACodeMarker: with a valid CRC, the received Marker and the ULPDU
	// Length fields do not agree on the start of an FPDU (RFC 5044 §8).
	MPACodeMarker uint8 = 0x03
	// MPACodeInvalidFrame: invalid MPA Request Frame or MPA Reply Frame
	// received (RFC 5044 §8).
	MPACodeInvalidFrame uint8 = 0x04
	// MPACodeLocalCatastrophic: a local error of enhanced connection
	// establishment with no more specific code (RFC 6581 §8, §9.3).
	MPACodeLocalCatastrophic uint8 = 0x05
	// MPACodeInsufficientIRD: insufficient IRD resources (RFC 6581 §8,
	// §9.1).
	MPACodeInsufficientIRD uint8 = 0x06
	// MPACodeNoMatchingRTR: no matching RTR option (RFC 6581 §8, §9.2).
	MPACodeNoMatchingRTR uint8 = 0x07
)

// TermCode is the Layer / Error Type / Error Code triple of a Terminate
// message (RFC 5040 §4.8 Figures 8 and 9): RDMA layer causes (Layer 0),
// DDP causes (Layer 1, RFC 5041 §7.2) and LLP causes (Layer 2, RFC 5044 §8,
// RFC 6581 §8). Layer and EType are 4-bit values.
type TermCode struct {
	Layer uint8
	EType uint8
	Code  uint8
}

// Every row of RFC 5040 §4.8 Figure 9 for the RDMA layer.
var (
	// TermLocalCatastrophic: RDMA, Local Catastrophic Error (no code).
	TermLocalCatastrophic = TermCode{LayerRDMA, RDMAETypeLocalCatastrophic, 0}
	// TermInvalidSTag: RDMA, Remote Protection, Invalid STag (0x00).
	TermInvalidSTag = TermCode{LayerRDMA, RDMAETypeRemoteProtection, RDMACodeInvalidSTag}
	// TermBaseBounds: RDMA, Remote Protection, Base or bounds violation (0x01).
	TermBaseBounds = TermCode{LayerRDMA, RDMAETypeRemoteProtection, RDMACodeBaseBounds}
	// TermAccessRights: RDMA, Remote Protection, Access rights violation (0x02).
	TermAccessRights = TermCode{LayerRDMA, RDMAETypeRemoteProtection, RDMACodeAccessRights}
	// TermSTagNotAssociated: RDMA, Remote Protection, STag not associated
	// with RDMAP Stream (0x03).
	TermSTagNotAssociated = TermCode{LayerRDMA, RDMAETypeRemoteProtection, RDMACodeSTagNotAssociated}
	// TermTOWrap: RDMA, Remote Protection, TO wrap (0x04).
	TermTOWrap = TermCode{LayerRDMA, RDMAETypeRemoteProtection, RDMACodeTOWrap}
	// TermProtectionCannotInvalidate: RDMA, Remote Protection, STag cannot
	// be Invalidated (0x09).
	TermProtectionCannotInvalidate = TermCode{LayerRDMA, RDMAETypeRemoteProtection, RDMACodeCannotInvalidate}
	// TermProtectionUnspecified: RDMA, Remote Protection, Unspecified (0xFF).
	TermProtectionUnspecified = TermCode{LayerRDMA, RDMAETypeRemoteProtection, RDMACodeUnspecified}
	// TermInvalidVersion: RDMA, Remote Operation, Invalid RDMAP version (0x05).
	TermInvalidVersion = TermCode{LayerRDMA, RDMAETypeRemoteOperation, RDMACodeInvalidVersion}
	// TermUnexpectedOpcode: RDMA, Remote Operation, Unexpected OpCode (0x06).
	TermUnexpectedOpcode = TermCode{LayerRDMA, RDMAETypeRemoteOperation, RDMACodeUnexpectedOpcode}
	// TermCatastrophicStream: RDMA, Remote Operation, Catastrophic error
	// localized to RDMAP Stream (0x07).
	TermCatastrophicStream = TermCode{LayerRDMA, RDMAETypeRemoteOperation, RDMACodeCatastrophicStream}
	// TermCatastrophicGlobal: RDMA, Remote Operation, Catastrophic error,
	// global (0x08).
	TermCatastrophicGlobal = TermCode{LayerRDMA, RDMAETypeRemoteOperation, RDMACodeCatastrophicGlobal}
	// TermOperationCannotInvalidate: RDMA, Remote Operation, STag cannot be
	// Invalidated (0x09).
	TermOperationCannotInvalidate = TermCode{LayerRDMA, RDMAETypeRemoteOperation, RDMACodeCannotInvalidate}
	// TermOperationUnspecified: RDMA, Remote Operation, Unspecified (0xFF).
	TermOperationUnspecified = TermCode{LayerRDMA, RDMAETypeRemoteOperation, RDMACodeUnspecified}
)

// Every row of RFC 5041 §7.2, as carried in a Terminate with Layer 1.
var (
	// TermDDPLocalCatastrophic: DDP, Local Catastrophic.
	TermDDPLocalCatastrophic = DDPTermCode(DDPTypeLocalCatastrophic, DDPCodeLocalCatastrophic)
	// TermDDPInvalidSTag: DDP, Tagged Buffer Error, Invalid STag.
	TermDDPInvalidSTag = DDPTermCode(DDPTypeTagged, DDPCodeInvalidSTag)
	// TermDDPBaseBounds: DDP, Tagged Buffer Error, Base or bounds violation.
	TermDDPBaseBounds = DDPTermCode(DDPTypeTagged, DDPCodeBaseBounds)
	// TermDDPSTagNotAssociated: DDP, Tagged Buffer Error, STag not
	// associated with DDP Stream.
	TermDDPSTagNotAssociated = DDPTermCode(DDPTypeTagged, DDPCodeSTagNotAssociated)
	// TermDDPTOWrap: DDP, Tagged Buffer Error, TO wrap.
	TermDDPTOWrap = DDPTermCode(DDPTypeTagged, DDPCodeTOWrap)
	// TermDDPTaggedVersion: DDP, Tagged Buffer Error, Invalid DDP version.
	TermDDPTaggedVersion = DDPTermCode(DDPTypeTagged, DDPCodeTaggedVersion)
	// TermDDPInvalidQN: DDP, Untagged Buffer Error, Invalid QN.
	TermDDPInvalidQN = DDPTermCode(DDPTypeUntagged, DDPCodeInvalidQN)
	// TermDDPNoBuffer: DDP, Untagged Buffer Error, Invalid MSN - no buffer
	// available.
	TermDDPNoBuffer = DDPTermCode(DDPTypeUntagged, DDPCodeNoBuffer)
	// TermDDPMSNRange: DDP, Untagged Buffer Error, Invalid MSN - MSN range
	// is not valid.
	TermDDPMSNRange = DDPTermCode(DDPTypeUntagged, DDPCodeMSNRange)
	// TermDDPInvalidMO: DDP, Untagged Buffer Error, Invalid MO.
	TermDDPInvalidMO = DDPTermCode(DDPTypeUntagged, DDPCodeInvalidMO)
	// TermDDPMessageTooLong: DDP, Untagged Buffer Error, DDP Message too
	// long for available buffer.
	TermDDPMessageTooLong = DDPTermCode(DDPTypeUntagged, DDPCodeMessageTooLong)
	// TermDDPUntaggedVersion: DDP, Untagged Buffer Error, Invalid DDP
	// version.
	TermDDPUntaggedVersion = DDPTermCode(DDPTypeUntagged, DDPCodeUntaggedVersion)
)

// Every MPA row (layer 2, error type 0) of RFC 5044 §8 and RFC 6581 §8.
var (
	// TermMPAConnectionLost: LLP, MPA, TCP connection closed or lost.
	TermMPAConnectionLost = MPATermCode(MPACodeConnectionLost)
	// TermMPACRC: LLP, MPA, MPA CRC error.
	TermMPACRC = MPATermCode(MPACodeCRC)
	// TermMPAMarker: LLP, MPA, Marker and ULPDU Length disagree.
	TermMPAMarker = MPATermCode(MPACodeMarker)
	// TermMPAInvalidFrame: LLP, MPA, invalid MPA Request or Reply Frame.
	TermMPAInvalidFrame = MPATermCode(MPACodeInvalidFrame)
	// TermMPALocalCatastrophic: LLP, MPA, local catastrophic error of the
	// enhanced connection establishment.
	TermMPALocalCatastrophic = MPATermCode(MPACodeLocalCatastrophic)
	// TermInsufficientIRD: LLP, MPA, insufficient IRD resources (RFC 6581
	// §9.1; over MPA and SCTP alike).
	TermInsufficientIRD = MPATermCode(MPACodeInsufficientIRD)
	// TermNoMatchingRTR: LLP, MPA, no matching RTR option (RFC 6581 §9.2;
	// over MPA and SCTP alike).
	TermNoMatchingRTR = MPATermCode(MPACodeNoMatchingRTR)
)

// DDPTermCode returns the Terminate code (Layer 1) of a DDP error.
func DDPTermCode(t DDPErrorType, code uint8) TermCode {
	return TermCode{Layer: LayerDDP, EType: uint8(t), Code: code}
}

// MPATermCode returns the Terminate code (Layer 2, error type 0) of an MPA
// error code.
func MPATermCode(code uint8) TermCode {
	return TermCode{Layer: LayerLLP, EType: LLPETypeMPA, Code: code}
}

// IsRemoteProtection reports whether c is an RDMA layer Remote Protection
// Error: for these RFC 5040 §4.8 Figure 10 includes the RDMA header of a
// terminated Read Request.
func (c TermCode) IsRemoteProtection() bool {
	return c.Layer == LayerRDMA && c.EType == RDMAETypeRemoteProtection
}

// Pack returns c as one number, Layer<<16 | EType<<8 | Code, for counters
// keyed by cause.
func (c TermCode) Pack() uint32 {
	return uint32(c.Layer)<<16 | uint32(c.EType)<<8 | uint32(c.Code)
}

// UnpackTermCode is the inverse of TermCode.Pack.
func UnpackTermCode(v uint32) TermCode {
	return TermCode{Layer: uint8(v >> 16), EType: uint8(v >> 8), Code: uint8(v)}
}

var rdmaETypeNames = [...]string{
	RDMAETypeLocalCatastrophic: "local catastrophic error",
	RDMAETypeRemoteProtection:  "remote protection error",
	RDMAETypeRemoteOperation:   "remote operation error",
}

var rdmaCodeNames = map[[2]uint8]string{
	{RDMAETypeRemoteProtection, RDMACodeInvalidSTag}:       "invalid STag",
	{RDMAETypeRemoteProtection, RDMACodeBaseBounds}:        "base or bounds violation",
	{RDMAETypeRemoteProtection, RDMACodeAccessRights}:      "access rights violation",
	{RDMAETypeRemoteProtection, RDMACodeSTagNotAssociated}: "STag not associated with RDMAP Stream",
	{RDMAETypeRemoteProtection, RDMACodeTOWrap}:            "TO wrap",
	{RDMAETypeRemoteProtection, RDMACodeCannotInvalidate}:  "STag cannot be invalidated",
	{RDMAETypeRemoteProtection, RDMACodeUnspecified}:       "unspecified error",
	{RDMAETypeRemoteOperation, RDMACodeInvalidVersion}:     "invalid RDMAP version",
	{RDMAETypeRemoteOperation, RDMACodeUnexpectedOpcode}:   "unexpected opcode",
	{RDMAETypeRemoteOperation, RDMACodeCatastrophicStream}: "catastrophic error, localized to RDMAP Stream",
	{RDMAETypeRemoteOperation, RDMACodeCatastrophicGlobal}: "catastrophic error, global",
	{RDMAETypeRemoteOperation, RDMACodeCannotInvalidate}:   "STag cannot be invalidated",
	{RDMAETypeRemoteOperation, RDMACodeUnspecified}:        "unspecified error",
}

var mpaCodeNames = [...]string{
	MPACodeConnectionLost:    "TCP connection lost",
	MPACodeCRC:               "MPA CRC error",
	MPACodeMarker:            "MPA marker and ULPDU length disagree",
	MPACodeInvalidFrame:      "invalid MPA Request or Reply frame",
	MPACodeLocalCatastrophic: "local catastrophic error",
	MPACodeInsufficientIRD:   "insufficient IRD resources",
	MPACodeNoMatchingRTR:     "no matching RTR option",
}

// String returns the RFC 5041 §7.2 description of the type.
func (t DDPErrorType) String() string {
	switch t {
	case DDPTypeLocalCatastrophic:
		return "local catastrophic"
	case DDPTypeTagged:
		return "tagged buffer error"
	case DDPTypeUntagged:
		return "untagged buffer error"
	case DDPTypeLLP:
		return "LLP error"
	}
	return fmt.Sprintf("reserved error type %#x", uint8(t))
}

// DDPCodeName returns the RFC 5041 §7.2 description of code within type t.
func DDPCodeName(t DDPErrorType, code uint8) string {
	switch t {
	case DDPTypeLocalCatastrophic:
		if code == DDPCodeLocalCatastrophic {
			return "local catastrophic"
		}
	case DDPTypeTagged:
		switch code {
		case DDPCodeInvalidSTag:
			return "invalid STag"
		case DDPCodeBaseBounds:
			return "base or bounds violation"
		case DDPCodeSTagNotAssociated:
			return "STag not associated with DDP stream"
		case DDPCodeTOWrap:
			return "TO wrap"
		case DDPCodeTaggedVersion:
			return "invalid DDP version"
		}
	case DDPTypeUntagged:
		switch code {
		case DDPCodeInvalidQN:
			return "invalid QN"
		case DDPCodeNoBuffer:
			return "invalid MSN - no buffer available"
		case DDPCodeMSNRange:
			return "invalid MSN - MSN range is not valid"
		case DDPCodeInvalidMO:
			return "invalid MO"
		case DDPCodeMessageTooLong:
			return "DDP message too long for available buffer"
		case DDPCodeUntaggedVersion:
			return "invalid DDP version"
		}
	case DDPTypeLLP:
		return fmt.Sprintf("LLP code %#02x", code)
	}
	return fmt.Sprintf("unknown code %#02x", code)
}

// ValidDDPCode reports whether (t, code) is a row of RFC 5041 §7.2 that the
// DDP layer or its ULP may report. DDPTypeLLP is reserved for the LLP and
// is not valid here.
func ValidDDPCode(t DDPErrorType, code uint8) bool {
	switch t {
	case DDPTypeLocalCatastrophic:
		return code == DDPCodeLocalCatastrophic
	case DDPTypeTagged:
		return code <= DDPCodeTaggedVersion
	case DDPTypeUntagged:
		return code >= DDPCodeInvalidQN && code <= DDPCodeUntaggedVersion
	}
	return false
}

// String names the code, for example "RDMA remote protection error: invalid
// STag (0/1/0x00)".
func (c TermCode) String() string {
	num := fmt.Sprintf("(%d/%d/%#02x)", c.Layer, c.EType, c.Code)
	switch c.Layer {
	case LayerRDMA:
		if c.EType == RDMAETypeLocalCatastrophic {
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
		t := DDPErrorType(c.EType)
		if t == DDPTypeLocalCatastrophic {
			return "DDP local catastrophic " + num
		}
		return "DDP " + t.String() + ": " + DDPCodeName(t, c.Code) + " " + num
	case LayerLLP:
		if c.EType == LLPETypeMPA && int(c.Code) < len(mpaCodeNames) && mpaCodeNames[c.Code] != "" {
			return "LLP error: " + mpaCodeNames[c.Code] + " " + num
		}
		return "LLP error " + num
	default:
		return "unknown layer " + num
	}
}
