package rdmapconf

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSetRTR_RFC6581_9_3(t *testing.T) {
	var c rdmap.EndpointConfig
	SetRTR(&c, true, true, iwarp.RTRSend|iwarp.RTRRead)
	assert.Equal(t, iwarp.RTRRead, c.SendRTR)
	assert.Zero(t, c.ExpectRTR)
	SetRTR(&c, true, true, iwarp.RTRSend|iwarp.RTRRead|iwarp.RTRWrite)
	assert.Equal(t, iwarp.RTRWrite, c.SendRTR)
	SetRTR(&c, false, true, iwarp.RTRRead|iwarp.RTRWrite)
	assert.Equal(t, iwarp.RTRRead|iwarp.RTRWrite, c.ExpectRTR)
	assert.Zero(t, c.SendRTR)
	SetRTR(&c, true, false, iwarp.RTRSend|iwarp.RTRWrite|iwarp.RTRRead)
	assert.Zero(t, c.SendRTR|c.ExpectRTR, "client-server model: no RTR")
}

func TestApply_RFC6581_9_1(t *testing.T) {
	c := rdmap.EndpointConfig{IRD: 16, ORD: 16}
	Apply(&c, true, iwarp.Depths{IRD: iwarp.NoNegotiation, ORD: 0}, false, 0)
	assert.Equal(t, 16, c.IRD, "NoNegotiation keeps the configured IRD")
	assert.Equal(t, -1, c.ORD, "a negotiated 0 is none")
	Apply(&c, false, iwarp.Depths{IRD: 4, ORD: 8}, true, iwarp.RTRWrite)
	assert.Equal(t, 4, c.IRD)
	assert.Equal(t, 8, c.ORD)
	assert.Equal(t, iwarp.RTRWrite, c.ExpectRTR)
}

// TestAfterDone: the function runs once the endpoint is done, and at once
// for one already done (rdmap sets the hook when it is initialised).
func TestAfterDone(t *testing.T) {
	a, b := llptest.NewPair()
	pd := new(rdmap.Device).AllocPD()
	ep, err := pd.NewEndpoint(a, rdmap.EndpointConfig{})
	require.NoError(t, err)
	defer func() { _ = b.Close() }()
	ran := make(chan struct{})
	AfterDone(ep, func() { close(ran) })
	require.NoError(t, ep.Close(context.Background()))
	<-ran
	again := make(chan struct{})
	AfterDone(ep, func() { close(again) })
	<-again
}
