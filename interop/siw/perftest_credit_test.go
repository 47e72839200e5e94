//go:build !race

package siw

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sctp-rdma/sctp-rdma/mpa"
)

// TestPerftest_SendCredits runs more Sends than the server's receive depth,
// so that our client must wait for the server's credit Writes
// (ctx_set_credit_wqes). Not under the race detector: the client polls the
// credit word that RDMA Writes place into its registered memory, as
// perftest does, and the detector cannot see the placement's ordering.
func TestPerftest_SendCredits(t *testing.T) {
	cfg := PerftestConfig{Verb: VerbSend, Size: 4096, Iters: 200, RxDepth: 8, TxDepth: 16, MPA: mpa.Config{NoCRC: true}}
	st, cl := runPerftestLoopback(t, cfg, cfg)
	assert.Equal(t, 200, cl.Iters)
	assert.Equal(t, 200, st.Verified)
	assert.GreaterOrEqual(t, cl.Credits, 200-8, "the client saw the credits")
}
