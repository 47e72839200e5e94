package iwarpwire

import "github.com/sctp-rdma/sctp-rdma/iwarp"

// EstablishmentTerminateLen is the length of the DDP segment
// AppendEstablishmentTerminate produces: an untagged DDP header and a
// Terminate Header with neither DDP Segment Length, terminated DDP header
// nor RDMA header (RFC 5040 §4.8).
const EstablishmentTerminateLen = DDPUntaggedHeaderLen + TerminateControlLen

// AppendEstablishmentTerminate appends the DDP segment of the RDMAP
// Terminate Message with which an initiator ends a connection whose
// enhanced establishment failed (RFC 6581 §9.1 code 6, §9.2 code 7, §9.3):
// the first and only message of the stream, sent before any RDMAP endpoint
// exists, by the LLP's connection manager (over MPA as the first FPDU,
// over SCTP as the first DATA chunk of the session's stream). It uses the
// encoders of the data path: a one-segment untagged DDP message on QN 2
// with MSN 1 (RFC 5041 §4.3: "The initial value for MSN MUST be one")
// whose RsvdULP carries the Terminate's RDMAP Control Field (RFC 5040
// §4.1), then a Terminate Control with M = D = R = 0.
func AppendEstablishmentTerminate(b []byte, code iwarp.TermCode) []byte {
	h := DDPUntaggedHeader{
		Last:    true,
		RsvdULP: [5]byte{RDMAPControlByte(iwarp.RDMAPOpTerminate)},
		QN:      RDMAPQNTerminate,
		MSN:     1,
	}
	b = h.Append(b)
	return AppendTerminateControl(b, code, false, false, false)
}
