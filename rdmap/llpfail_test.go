package rdmap

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// failingStream is an LLP stream whose sends fail with an LLP error once
// broken, as MPA's do when TCP was reset (RFC 5044 §8 code 1).
type failingStream struct {
	*llptest.Pipe
	broken atomic.Bool
}

var errLost = errors.New("connection lost")

func (f *failingStream) SendSegment(hdr, payload []byte) error {
	if f.broken.Load() {
		return &llp.Error{EType: 0, Code: 0x01, Err: errLost}
	}
	return f.Pipe.SendSegment(hdr, payload)
}

// An LLP error met while sending is an LLP error (Terminate layer 2, RFC
// 5040 §4.8 Figure 9) just as when the receive side meets it first
// (Closed): the TerminateError carries the LLP's type and code, not "local
// catastrophic". Found by e2e/faults.TestPeerReset_TCP, where a TCP RST
// surfaced on the send path as RDMA 0/0/0x00.
func TestEndpoint_SendPathLLPErrorIsLayer2_RFC5040_4_8(t *testing.T) {
	a, b := llptest.NewPair()
	fs := &failingStream{Pipe: a}
	ep, _ := startOver(t, fs, b, nil)
	fs.broken.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ep.send(ctx, []byte("x"))
	require.ErrorIs(t, err, ErrFlushed)
	waitDone(t, ep)
	var te *TerminateError
	require.ErrorAs(t, ep.Err(), &te)
	assert.Equal(t, iwarp.TermCode{Layer: iwarp.LayerLLP, EType: 0, Code: 0x01}, te.Code)
	assert.ErrorIs(t, ep.Err(), errLost)
}
