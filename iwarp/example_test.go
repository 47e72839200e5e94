package iwarp_test

import (
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

func ExampleRTR_Pick() {
	fmt.Println(iwarp.RTRAll.Pick(), (iwarp.RTRSend | iwarp.RTRRead).Pick())
	// Output: write read
}

// A responder that can raise its IRD to 8 answers an initiator asking for
// ORD 4 with IRD 2; the initiator then lowers its ORD to what the responder
// serves (RFC 6581 §9.1).
func ExampleNegotiateResponder() {
	req := iwarp.IRDORD{IRD: 2, ORD: 4}
	reply, resp := iwarp.NegotiateResponder(iwarp.Depths{IRD: 1, ORD: 16}, 8, 0, req)
	init, err := iwarp.NegotiateInitiator(iwarp.Depths{IRD: 2, ORD: 4}, 2, reply)
	fmt.Println(reply, "| responder", resp, "| initiator", init, err)
	// Output: IRD 4 ORD 2 | responder {4 2} | initiator {2 4} <nil>
}

func ExampleAppendEstablishmentTerminate() {
	fmt.Printf("% x\n", iwarp.AppendEstablishmentTerminate(nil, iwarp.TermInsufficientIRD))
	// Output: 41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00 20 06 00 00
}
