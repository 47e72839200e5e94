package iwarpwire

import (
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// DDPTermCode returns the Terminate code (Layer 1) of a DDP error.
func DDPTermCode(t iwarp.DDPErrorType, code uint8) iwarp.TermCode {
	return iwarp.TermCode{Layer: iwarp.LayerDDP, EType: uint8(t), Code: code}
}

// termRow returns the row of c in iwarp.TermCodes.
func termRow(c iwarp.TermCode) (iwarp.TermRow, bool) {
	for _, r := range iwarp.TermCodes() {
		if r.Code == c {
			return r, true
		}
	}
	return iwarp.TermRow{}, false
}

// ValidDDPCode reports whether (t, code) is a row of RFC 5041 §7.2 that the
// DDP layer or its ULP may report; error type 0x3 is reserved for the LLP
// and is not valid here.
func ValidDDPCode(t iwarp.DDPErrorType, code uint8) bool {
	_, ok := termRow(DDPTermCode(t, code))
	return ok
}

// DDPCodeName returns the RFC 5041 §7.2 description of code within type t.
func DDPCodeName(t iwarp.DDPErrorType, code uint8) string {
	if r, ok := termRow(DDPTermCode(t, code)); ok {
		return r.Name
	}
	return fmt.Sprintf("unknown code %#02x", code)
}

// PackTermCode returns c as one number, Layer<<16 | EType<<8 | Code, for
// counters keyed by cause.
func PackTermCode(c iwarp.TermCode) uint32 {
	return uint32(c.Layer)<<16 | uint32(c.EType)<<8 | uint32(c.Code)
}

// UnpackTermCode is the inverse of PackTermCode.
func UnpackTermCode(v uint32) iwarp.TermCode {
	return iwarp.TermCode{Layer: uint8(v >> 16), EType: uint8(v >> 8), Code: uint8(v)}
}
