package sctpllp

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/transport/v5/dpipe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// blackholeConn drops every packet written once its switch is on: the
// peer is silent, with neither ABORT nor ICMP.
type blackholeConn struct {
	net.Conn
	on *atomic.Bool
}

func (b blackholeConn) Write(p []byte) (int, error) {
	if b.on.Load() {
		return len(p), nil
	}
	return b.Conn.Write(p)
}

// deadPeerPair is pipePair over a link that can be cut.
func deadPeerPair(t *testing.T, cfg Config, pcfg pion.Config) (client, server *Association, cut *atomic.Bool) {
	t.Helper()
	cut = new(atomic.Bool)
	ca, cb := dpipe.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch := make(chan *pion.Transport, 1)
	go func() {
		st, err := pion.NewTransport(ctx, blackholeConn{cb, cut}, false, pcfg)
		assert.NoError(t, err)
		ch <- st
	}()
	ct, err := pion.NewTransport(ctx, blackholeConn{ca, cut}, true, pcfg)
	require.NoError(t, err)
	st := <-ch
	require.NotNil(t, st)
	client, server = NewAssociation(ct, cfg), NewAssociation(st, cfg)
	t.Cleanup(func() {
		_ = client.Abort()
		_ = server.Abort()
	})
	return client, server, cut
}

// pion.Config.DeadPeerTimeout: a silent peer ends the association (and
// every session on it, RFC 5043 §11.3) within the timeout plus one check
// interval, with ErrPeerUnresponsive; pion alone would retransmit forever.
func TestPion_DeadPeerTimeout_SilentPeer(t *testing.T) {
	const timeout = 400 * time.Millisecond
	c, s, cut := deadPeerPair(t, Config{KeepIdle: true}, pion.Config{DeadPeerTimeout: timeout})
	cs, _, ch, _ := openPair(t, c, s, 1, OpenRequest{}, AcceptParams{})
	cut.Store(true)
	start := time.Now()
	require.NoError(t, cs.SendSegment([]byte("lost"), nil)) // outstanding DATA
	for _, a := range []*Association{c, s} {
		select {
		case <-a.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("association with a silent peer did not end")
		}
		assert.ErrorIs(t, a.Err(), backend.ErrPeerUnresponsive)
		assert.ErrorIs(t, a.Err(), llp.ErrAborted)
	}
	elapsed := time.Since(start)
	assert.GreaterOrEqual(t, elapsed, timeout-50*time.Millisecond, "declared dead before the timeout")
	err := ch.waitClosed(t)
	assert.ErrorIs(t, err, backend.ErrPeerUnresponsive)
	var ae *AssociationError
	assert.ErrorAs(t, err, &ae)
	t.Logf("silent peer detected after %v (timeout %v)", elapsed.Round(time.Millisecond), timeout)
}

// An idle but live peer is kept: heartbeats are answered, so silence in
// the data path alone never ends the association.
func TestPion_DeadPeerTimeout_IdlePeerKept(t *testing.T) {
	const timeout = 200 * time.Millisecond
	c, s, _ := deadPeerPair(t, Config{KeepIdle: true}, pion.Config{DeadPeerTimeout: timeout})
	cs, _, _, sh := openPair(t, c, s, 1, OpenRequest{}, AcceptParams{})
	time.Sleep(8 * timeout)
	for _, a := range []*Association{c, s} {
		select {
		case <-a.Done():
			t.Fatalf("idle association ended: %v", a.Err())
		default:
		}
	}
	require.NoError(t, cs.SendSegment([]byte("still here"), nil))
	require.Eventually(t, func() bool { return sh.count() == 1 }, 5*time.Second, 5*time.Millisecond)
}
