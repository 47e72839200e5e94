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
// peer is silent, with neither ABORT nor ICMP. It counts the packets it
// passes on.
type blackholeConn struct {
	net.Conn
	on     *atomic.Bool
	passed *atomic.Int64
}

func (b blackholeConn) Write(p []byte) (int, error) {
	if b.on.Load() {
		return len(p), nil
	}
	b.passed.Add(1)
	return b.Conn.Write(p)
}

// deadPeerPair is pipePair over a link that can be cut; passed counts the
// packets both ends sent over it.
func deadPeerPair(t *testing.T, cfg Config, pcfg pion.Config) (client, server *Association, cut *atomic.Bool, passed *atomic.Int64) {
	t.Helper()
	cut, passed = new(atomic.Bool), new(atomic.Int64)
	ca, cb := dpipe.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch := make(chan backend.Transport, 1)
	go func() {
		st, err := pion.NewTransport(ctx, blackholeConn{cb, cut, passed}, false, pcfg)
		assert.NoError(t, err)
		ch <- st
	}()
	ct, err := pion.NewTransport(ctx, blackholeConn{ca, cut, passed}, true, pcfg)
	require.NoError(t, err)
	st := <-ch
	require.NotNil(t, st)
	client, server = NewAssociation(ct, cfg), NewAssociation(st, cfg)
	t.Cleanup(func() {
		_ = client.Abort()
		_ = server.Abort()
	})
	return client, server, cut, passed
}

// pion.Config.DeadPeerTimeout: a silent peer ends the association (and
// every session on it, RFC 5043 §11.3) within the timeout plus one check
// interval, with ErrPeerUnresponsive; pion alone would retransmit forever.
func TestPion_DeadPeerTimeout_SilentPeer(t *testing.T) {
	const timeout = 400 * time.Millisecond
	c, s, cut, _ := deadPeerPair(t, Config{KeepIdle: true}, pion.Config{DeadPeerTimeout: timeout})
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
// the data path alone never ends the association. The association idles
// through 12 probes and their answers (a probe per DeadPeerTimeout/4 of
// silence: at least 1.5 timeouts without data); the timeout is wide
// enough (1 s) that a loaded host's scheduling delays do not make an
// answered probe late.
func TestPion_DeadPeerTimeout_IdlePeerKept(t *testing.T) {
	const timeout = time.Second
	c, s, _, passed := deadPeerPair(t, Config{KeepIdle: true}, pion.Config{DeadPeerTimeout: timeout})
	cs, _, _, sh := openPair(t, c, s, 1, OpenRequest{}, AcceptParams{})
	idle := passed.Load()
	require.Eventually(t, func() bool { return passed.Load() >= idle+24 }, 60*time.Second, 10*time.Millisecond,
		"12 probes and their answers")
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
