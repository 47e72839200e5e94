package iwarp_test

import (
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// A Terminate's code is matched against the named rows of Term; TermCodes
// lists the same rows with their RFC names.
func ExampleTermTable() {
	code := iwarp.TermCode{Layer: iwarp.LayerDDP, EType: uint8(iwarp.DDPTypeTagged), Code: 0}
	fmt.Println(code == iwarp.Term.DDPInvalidSTag, code)
	fmt.Println(len(iwarp.TermCodes()))
	// Output:
	// true DDP tagged buffer error: invalid STag (1/1/0x00)
	// 33
}
