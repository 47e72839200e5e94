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
	// rdmaeTypeRemoteProtection is a remote protection error.
	rdmaeTypeRemoteProtection uint8 = 0x1
	// rdmaeTypeRemoteOperation is a remote operation error.
	rdmaeTypeRemoteOperation uint8 = 0x2
)

// DDPErrorType is the 4-bit DDP Error Type of RFC 5041 §7.2, carried as the
// EType of a Terminate with Layer 1.
type DDPErrorType uint8

// DDP Error Types, RFC 5041 §7.2.
const (
	// ddpTypeLocalCatastrophic (0x0) is a catastrophic error local to the
	// receiving endpoint.
	ddpTypeLocalCatastrophic DDPErrorType = 0x0
	// DDPTypeTagged (0x1) is a Tagged Buffer error.
	DDPTypeTagged DDPErrorType = 0x1
	// DDPTypeUntagged (0x2) is an Untagged Buffer error.
	DDPTypeUntagged DDPErrorType = 0x2
	// ddpTypeLLP (0x3) is reserved for use by the LLP (RFC 5041 §7.2); the
	// DDP layer itself never produces it.
	ddpTypeLLP DDPErrorType = 0x3
)

// LLPETypeMPA is the Terminate error type of MPA errors (layer 2): RFC 6581
// §8 fixes it at 0x0; the codes are the IANA "MPA Errors" registry
// (RFC 6580 §3.3), used over SCTP as well (RFC 6581 §9.1, §9.2).
const LLPETypeMPA uint8 = 0x0

// TermCode is the Layer / Error Type / Error Code triple of a Terminate
// message (RFC 5040 §4.8 Figures 8 and 9): RDMA layer causes (Layer 0),
// DDP causes (Layer 1, RFC 5041 §7.2) and LLP causes (Layer 2, RFC 5044 §8,
// RFC 6581 §8). Layer and EType are 4-bit values.
type TermCode struct {
	Layer uint8
	EType uint8
	Code  uint8
}

// TermRow is one row of the Terminate code space: a code and its name.
type TermRow struct {
	Code TermCode
	Name string
}

// termTable is the whole Terminate code space, filled in declaration order
// by the row calls of Term below: each (Layer, EType, Code) triple is
// written once, there, and names (String), the checks and the ddp error
// prototypes all come from it.
var termTable []TermRow

func row(layer, etype, code uint8, name string) TermCode {
	c := TermCode{Layer: layer, EType: etype, Code: code}
	termTable = append(termTable, TermRow{Code: c, Name: name})
	return c
}

// TermTable names every row of the Terminate code space: the RDMA layer
// rows of RFC 5040 §4.8 Figure 9, the DDP rows of RFC 5041 §7.2 (Layer 1,
// fields DDP*) and the MPA rows of RFC 5044 §8 / RFC 6581 §8 (Layer 2,
// error type 0; codes 6 and 7 over SCTP too, RFC 6581 §9.1, §9.2). Match a
// rdmap.TerminateError's Code against a field of [Term].
type TermTable struct {
	// RDMA layer (Layer 0), RFC 5040 §4.8 Figure 9.
	LocalCatastrophic, InvalidSTag, BaseBounds, AccessRights,
	STagNotAssociated, TOWrap, ProtectionCannotInvalidate,
	ProtectionUnspecified, InvalidVersion, UnexpectedOpcode,
	CatastrophicStream, CatastrophicGlobal,
	OperationCannotInvalidate, OperationUnspecified TermCode
	// DDP (Layer 1), RFC 5041 §7.2.
	DDPLocalCatastrophic, DDPInvalidSTag, DDPBaseBounds,
	DDPSTagNotAssociated, DDPTOWrap, DDPTaggedVersion, DDPInvalidQN,
	DDPNoBuffer, DDPMSNRange, DDPInvalidMO, DDPMessageTooLong,
	DDPUntaggedVersion TermCode
	// MPA (Layer 2, error type 0), RFC 5044 §8 (0x01-0x04) and RFC 6581 §8
	// (0x05-0x07).
	MPAConnectionLost, MPACRC, MPAMarker, MPAInvalidFrame,
	MPALocalCatastrophic, InsufficientIRD, NoMatchingRTR TermCode
}

// Term is the Terminate code space by name; the caller must not modify it.
var Term = TermTable{
	LocalCatastrophic:          row(LayerRDMA, RDMAETypeLocalCatastrophic, 0x00, "local catastrophic error"),
	InvalidSTag:                row(LayerRDMA, rdmaeTypeRemoteProtection, 0x00, "invalid STag"),
	BaseBounds:                 row(LayerRDMA, rdmaeTypeRemoteProtection, 0x01, "base or bounds violation"),
	AccessRights:               row(LayerRDMA, rdmaeTypeRemoteProtection, 0x02, "access rights violation"),
	STagNotAssociated:          row(LayerRDMA, rdmaeTypeRemoteProtection, 0x03, "STag not associated with RDMAP Stream"),
	TOWrap:                     row(LayerRDMA, rdmaeTypeRemoteProtection, 0x04, "TO wrap"),
	ProtectionCannotInvalidate: row(LayerRDMA, rdmaeTypeRemoteProtection, 0x09, "STag cannot be invalidated"),
	ProtectionUnspecified:      row(LayerRDMA, rdmaeTypeRemoteProtection, 0xFF, "unspecified error"),
	InvalidVersion:             row(LayerRDMA, rdmaeTypeRemoteOperation, 0x05, "invalid RDMAP version"),
	UnexpectedOpcode:           row(LayerRDMA, rdmaeTypeRemoteOperation, 0x06, "unexpected opcode"),
	CatastrophicStream:         row(LayerRDMA, rdmaeTypeRemoteOperation, 0x07, "catastrophic error, localized to RDMAP Stream"),
	CatastrophicGlobal:         row(LayerRDMA, rdmaeTypeRemoteOperation, 0x08, "catastrophic error, global"),
	OperationCannotInvalidate:  row(LayerRDMA, rdmaeTypeRemoteOperation, 0x09, "STag cannot be invalidated"),
	OperationUnspecified:       row(LayerRDMA, rdmaeTypeRemoteOperation, 0xFF, "unspecified error"),
	DDPLocalCatastrophic:       row(LayerDDP, uint8(ddpTypeLocalCatastrophic), 0x00, "local catastrophic"),
	DDPInvalidSTag:             row(LayerDDP, uint8(DDPTypeTagged), 0x00, "invalid STag"),                           // tagged check 1
	DDPBaseBounds:              row(LayerDDP, uint8(DDPTypeTagged), 0x01, "base or bounds violation"),               // checks 3, 4
	DDPSTagNotAssociated:       row(LayerDDP, uint8(DDPTypeTagged), 0x02, "STag not associated with DDP stream"),    // checks 1, 2; §8.2
	DDPTOWrap:                  row(LayerDDP, uint8(DDPTypeTagged), 0x03, "TO wrap"),                                // check 5
	DDPTaggedVersion:           row(LayerDDP, uint8(DDPTypeTagged), 0x04, "invalid DDP version"),                    // §4.1 DV
	DDPInvalidQN:               row(LayerDDP, uint8(DDPTypeUntagged), 0x01, "invalid QN"),                           // untagged check 1
	DDPNoBuffer:                row(LayerDDP, uint8(DDPTypeUntagged), 0x02, "invalid MSN - no buffer available"),    // check 2
	DDPMSNRange:                row(LayerDDP, uint8(DDPTypeUntagged), 0x03, "invalid MSN - MSN range is not valid"), // check 5
	DDPInvalidMO:               row(LayerDDP, uint8(DDPTypeUntagged), 0x04, "invalid MO"),                           // check 3
	DDPMessageTooLong:          row(LayerDDP, uint8(DDPTypeUntagged), 0x05, "DDP message too long for available buffer"),
	DDPUntaggedVersion:         row(LayerDDP, uint8(DDPTypeUntagged), 0x06, "invalid DDP version"),
	MPAConnectionLost:          row(LayerLLP, LLPETypeMPA, 0x01, "TCP connection lost"),
	MPACRC:                     row(LayerLLP, LLPETypeMPA, 0x02, "MPA CRC error"),
	MPAMarker:                  row(LayerLLP, LLPETypeMPA, 0x03, "MPA marker and ULPDU length disagree"),
	MPAInvalidFrame:            row(LayerLLP, LLPETypeMPA, 0x04, "invalid MPA Request or Reply frame"),
	MPALocalCatastrophic:       row(LayerLLP, LLPETypeMPA, 0x05, "local catastrophic error"),
	InsufficientIRD:            row(LayerLLP, LLPETypeMPA, 0x06, "insufficient IRD resources"),
	NoMatchingRTR:              row(LayerLLP, LLPETypeMPA, 0x07, "no matching RTR option"),
}

// TermCodes returns every row of the Terminate code space, in the order of
// RFC 5040 Figure 9, RFC 5041 §7.2 and RFC 5044 §8 / RFC 6581 §8. The
// caller must not modify it.
func TermCodes() []TermRow { return termTable }

// lookup returns the row of c.
func lookup(c TermCode) (TermRow, bool) {
	for _, r := range termTable {
		if r.Code == c {
			return r, true
		}
	}
	return TermRow{}, false
}

var rdmaETypeNames = [...]string{
	RDMAETypeLocalCatastrophic: "local catastrophic error",
	rdmaeTypeRemoteProtection:  "remote protection error",
	rdmaeTypeRemoteOperation:   "remote operation error",
}

// String returns the RFC 5041 §7.2 description of the type.
func (t DDPErrorType) String() string {
	switch t {
	case ddpTypeLocalCatastrophic:
		return "local catastrophic"
	case DDPTypeTagged:
		return "tagged buffer error"
	case DDPTypeUntagged:
		return "untagged buffer error"
	case ddpTypeLLP:
		return "LLP error"
	}
	return fmt.Sprintf("reserved error type %#x", uint8(t))
}

// ddpCodeName names code within DDP error type t, given its row r if known.
func ddpCodeName(t DDPErrorType, code uint8, r TermRow, known bool) string {
	switch {
	case known:
		return r.Name
	case t == ddpTypeLLP:
		return fmt.Sprintf("LLP code %#02x", code)
	}
	return fmt.Sprintf("unknown code %#02x", code)
}

// String names the code, for example "RDMA remote protection error: invalid
// STag (0/1/0x00)".
func (c TermCode) String() string {
	num := fmt.Sprintf("(%d/%d/%#02x)", c.Layer, c.EType, c.Code)
	r, known := lookup(c)
	switch c.Layer {
	case LayerRDMA:
		if c.EType == RDMAETypeLocalCatastrophic {
			return "RDMA local catastrophic error " + num
		}
		et := "unknown error type"
		if int(c.EType) < len(rdmaETypeNames) {
			et = rdmaETypeNames[c.EType]
		}
		name := "unknown code"
		if known {
			name = r.Name
		}
		return "RDMA " + et + ": " + name + " " + num
	case LayerDDP:
		t := DDPErrorType(c.EType)
		if t == ddpTypeLocalCatastrophic {
			return "DDP local catastrophic " + num
		}
		return "DDP " + t.String() + ": " + ddpCodeName(t, c.Code, r, known) + " " + num
	case LayerLLP:
		if known {
			return "LLP error: " + r.Name + " " + num
		}
		return "LLP error " + num
	default:
		return "unknown layer " + num
	}
}
