package sctpllp

import "github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"

// functionCode is the 16-bit function code of a DDP Stream Session
// Control message (RFC 5043 §5.2.3, RFC 6581 §7); its String is the RFC
// name.
type functionCode = ddpchunk.FunctionCode

// Function codes of RFC 5043 §5.2.3 and RFC 6581 §7 (IANA "SCTP Function
// Codes for DDP Session Control").
const (
	funcInitiate         = ddpchunk.FuncInitiate
	funcAccept           = ddpchunk.FuncAccept
	funcReject           = ddpchunk.FuncReject
	funcTerminate        = ddpchunk.FuncTerminate
	funcEnhancedInitiate = ddpchunk.FuncEnhancedInitiate
	funcEnhancedAccept   = ddpchunk.FuncEnhancedAccept
	funcEnhancedReject   = ddpchunk.FuncEnhancedReject
)
