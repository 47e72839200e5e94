package bench

import (
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// errOf drops the first result of an rdmap call (Endpoint.Do,
// Endpoint.PostSend), for require.NoError and friends.
func errOf[T any](_ T, err error) error { return err }

// received is the number of Sends and Immediate Data messages ep took
// (counted as they arrive, ahead of their completions).
func received(ep *rdmap.Endpoint) uint64 {
	st := ep.Stats()
	return st.Received[iwarp.RDMAPOpSend] + st.Received[iwarp.RDMAPOpImmediate]
}
