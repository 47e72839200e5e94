package iwarpwire_test

import (
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

func ExamplePickRTR() {
	fmt.Println(iwarpwire.PickRTR(iwarp.RTRAll), iwarpwire.PickRTR(iwarp.RTRSend|iwarp.RTRRead))
	// Output: write read
}

// A responder that can raise its IRD to 8 answers an initiator asking for
// ORD 4 with IRD 2; the initiator then lowers its ORD to what the responder
// serves (RFC 6581 §9.1).
func ExampleNegotiateResponder() {
	req := iwarp.IRDORD{IRD: 2, ORD: 4}
	reply, resp := iwarpwire.NegotiateResponder(iwarp.Depths{IRD: 1, ORD: 16}, 8, 0, req)
	init, err := iwarpwire.NegotiateInitiator(iwarp.Depths{IRD: 2, ORD: 4}, 2, reply)
	fmt.Println(reply, "| responder", resp, "| initiator", init, err)
	// Output: IRD 4 ORD 2 | responder {4 2} | initiator {2 4} <nil>
}

func ExampleAppendEstablishmentTerminate() {
	fmt.Printf("% x\n", iwarpwire.AppendEstablishmentTerminate(nil, iwarp.Term.InsufficientIRD))
	// Output: 41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00 20 06 00 00
}
