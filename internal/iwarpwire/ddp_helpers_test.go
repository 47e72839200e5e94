package iwarpwire

import "github.com/sctp-rdma/sctp-rdma/iwarp"

// Prototypes of the DDP rows the parsers report, for errors.Is.
var (
	errLocalCatastrophic = NewDDPError(iwarp.Term.DDPLocalCatastrophic, nil)
	errTaggedVersion     = NewDDPError(iwarp.Term.DDPTaggedVersion, nil)
	errUntaggedVersion   = NewDDPError(iwarp.Term.DDPUntaggedVersion, nil)
)

// ddpTaggedSeg builds a tagged segment.
func ddpTaggedSeg(last bool, ulp uint8, stag uint32, to uint64, payload []byte) []byte {
	h := DDPTaggedHeader{Last: last, RsvdULP: ulp, STag: stag, TO: to}
	return append(h.Append(nil), payload...)
}

// ddpUntaggedSeg builds an untagged segment.
func ddpUntaggedSeg(last bool, qn, msn, mo uint32, payload []byte) []byte {
	h := DDPUntaggedHeader{Last: last, QN: qn, MSN: msn, MO: mo}
	return append(h.Append(nil), payload...)
}
