package rdmap

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
)

// evenPipe is an llptest.Pipe that reports wire sizes (WireSize).
type evenPipe struct{ *llptest.Pipe }

func (evenPipe) WireSize(n int) int { return (n + 3) &^ 3 }

// The DDP sender sees the LLP stream through respStream, which passes on
// the stream's wire sizes (WireSize, package llp), so that DDP cuts messages evenly
// over an LLP that asks for it, and reports none over one that does not.
func TestRespStreamForwardsWireSize(t *testing.T) {
	dev := newDevice(0, 0)
	pa, pb := llptest.NewPair()
	t.Cleanup(func() { _ = pa.Abort(); _ = pb.Abort() })
	e, err := dev.AllocPD().NewEndpoint(evenPipe{pa}, EndpointConfig{})
	if !assert.NoError(t, err) {
		return
	}
	assert.Equal(t, 104, (*respStream)(e).WireSize(101))
	plain, err := dev.AllocPD().NewEndpoint(pb, EndpointConfig{})
	if !assert.NoError(t, err) {
		return
	}
	assert.Zero(t, (*respStream)(plain).WireSize(101))
}
