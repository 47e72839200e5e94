package sctpllp

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAssocStats_SessionControl_RFC5043_5_2_3 counts the session control
// messages both ends of a pion association exchange: an Initiate/Accept
// pair per session, a Reject, a Terminate, and a stream labelled
// erroneous; pion's smoothed RTT is reported once data was acknowledged.
func TestAssocStats_SessionControl_RFC5043_5_2_3(t *testing.T) {
	c, s := udpPair(t, Config{KeepIdle: true})
	cs1, _, _, sh1 := openPair(t, c, s, 1, OpenRequest{}, AcceptParams{})
	_, _, _, _ = openPair(t, c, s, 2, OpenRequest{Enhanced: true}, AcceptParams{})
	for range 20 {
		require.NoError(t, cs1.SendSegment([]byte{1}, make([]byte, 1000)))
	}
	sh1.waitCount(t, 20)
	require.NoError(t, cs1.Close()) // the client's Terminate
	require.NoError(t, sh1.waitClosed(t))
	require.NoError(t, c.MarkErroneous(2))

	require.Eventually(t, func() bool { return s.Stats().ControlReceived.Terminate == 2 }, 10*time.Second, 5*time.Millisecond)
	cst, sst := c.Stats(), s.Stats()
	assert.Equal(t, uint64(1), cst.ControlSent.Initiate)
	assert.Equal(t, uint64(1), cst.ControlSent.EnhancedInitiate)
	assert.Equal(t, uint64(1), sst.ControlReceived.Initiate)
	assert.Equal(t, uint64(1), sst.ControlReceived.EnhancedInitiate)
	assert.Equal(t, uint64(1), sst.ControlSent.Accept)
	assert.Equal(t, uint64(1), sst.ControlSent.EnhancedAccept)
	assert.Equal(t, uint64(1), cst.ControlReceived.Accept)
	assert.Equal(t, uint64(1), cst.ControlReceived.EnhancedAccept)
	assert.Equal(t, uint64(2), cst.ControlSent.Terminate, "Close on stream 1, erroneous stream 2")
	assert.Equal(t, uint64(1), cst.ErroneousStreams)
	assert.Zero(t, sst.ErroneousStreams)
	require.True(t, cst.Transport.HasSRTT, "pion measured an RTT")
	assert.Greater(t, cst.Transport.SRTT, time.Duration(0))
	assert.Less(t, cst.Transport.SRTT, 5*time.Second)
	assert.True(t, cst.Transport.HasRetransmissions)

	// A Reject (RFC 5043 §6.3) on a fresh stream.
	in := make(chan error, 1)
	go func() {
		inc, err := s.Accept(ctx10(t))
		if err == nil {
			err = inc.Reject([]byte("no"))
		}
		in <- err
	}()
	_, err := c.Open(ctx10(t), 3, OpenRequest{})
	require.Error(t, err)
	require.NoError(t, <-in)
	assert.Equal(t, uint64(1), s.Stats().ControlSent.Reject)
	assert.Equal(t, uint64(1), c.Stats().ControlReceived.Reject)
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
