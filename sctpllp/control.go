package sctpllp

import "github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"

// FunctionCode is the 16-bit function code of a DDP Stream Session Control
// message (RFC 5043 §5.2.3, RFC 6581 §7); its String is the RFC name.
type FunctionCode = ddpchunk.FunctionCode

// Function codes of RFC 5043 §5.2.3 and RFC 6581 §7 (IANA "SCTP Function
// Codes for DDP Session Control").
const (
	FuncInitiate         = ddpchunk.FuncInitiate
	FuncAccept           = ddpchunk.FuncAccept
	FuncReject           = ddpchunk.FuncReject
	FuncTerminate        = ddpchunk.FuncTerminate
	FuncEnhancedInitiate = ddpchunk.FuncEnhancedInitiate
	FuncEnhancedAccept   = ddpchunk.FuncEnhancedAccept
	FuncEnhancedReject   = ddpchunk.FuncEnhancedReject
)
