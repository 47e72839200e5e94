package faults

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

const (
	faultStreams  = 4                // DDP streams on the pion association
	progressLimit = 30 * time.Second // load start → progressAt completions
	flushLimit    = 20 * time.Second // fault → every WR completed
)

// leakCheck registers goleak.VerifyNone as the last cleanup of t: nothing
// the test started may outlive it.
func leakCheck(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// openStreams opens n streams on mgr and starts a load on each.
func openStreams(t *testing.T, ctx context.Context, mgr *streams.Manager, n int) []*load {
	t.Helper()
	var loads []*load
	for i := 1; i <= n; i++ {
		st, err := mgr.Open(ctx, uint16(i), streams.OpenOptions{})
		require.NoError(t, err)
		adv, err := parseAdvert(st.Session.Params().PeerPrivateData)
		require.NoError(t, err)
		loads = append(loads, startLoad(t, fmt.Sprintf("stream %d", i), st.Endpoint, adv, i-1, n))
	}
	return loads
}

// dialPion dials addr with pion SCTP and returns a manager over it.
func dialPion(t *testing.T, ctx context.Context, addr string, cfg sctpllp.Config, in func(func() error) error) *streams.Manager {
	t.Helper()
	var a *sctpllp.Association
	require.NoError(t, in(func() error {
		var err error
		a, err = sctpllp.Dial(ctx, addr, cfg)
		return err
	}))
	mgr := streams.New(a, new(rdmap.Device).AllocPD(), streamsConfig(loadRecvs))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = mgr.Close(cctx)
		_ = a.Abort()
	})
	return mgr
}

// sctpFault dials addr (from in's namespace) with cfg, runs a load on
// faultStreams streams until it progresses, applies fault (which returns
// when it struck), and returns the manager once every work request has
// completed and the association is known lost.
func sctpFault(t *testing.T, addr string, cfg sctpllp.Config, in func(func() error) error, fault func() time.Time) (*streams.Manager, faultResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mgr := dialPion(t, ctx, addr, cfg, in)
	loads := openStreams(t, ctx, mgr, faultStreams)
	waitProgress(t, loads, progressLimit)
	out := totalOutstanding(loads)
	at := fault()
	res := finish(t, loads, at, out, flushLimit)
	checkAssociationLost(t, mgr, loads)
	return mgr, res
}

// checkAssociationLost asserts the error every stream of an association
// that ended under it reports (RFC 5043 §11.3: the sessions end with the
// association) and that the association itself failed.
func checkAssociationLost(t *testing.T, mgr *streams.Manager, loads []*load) {
	t.Helper()
	for _, l := range loads {
		// The receive side learns of it as the end of the association
		// (*sctpllp.AssociationError, wrapping llp.ErrAborted); a
		// transmit that comes first fails with ErrAssociationClosed.
		err := l.ep.Err()
		require.Error(t, err, l.name)
		var ae *sctpllp.AssociationError
		if !errors.Is(err, backend.ErrAssociationClosed) {
			assert.ErrorIs(t, err, llp.ErrAborted, "%s", l.name)
			assert.ErrorAs(t, err, &ae, "%s: %v", l.name, err)
		}
		t.Logf("%s: %v", l.name, err)
	}
	a := mgr.Association()
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("association still up after every stream failed")
	}
	assert.ErrorIs(t, a.Err(), llp.ErrAborted, "the association failed: not a graceful end")
	t.Logf("association error: %v", a.Err())
}

// TestPeerKilled_Pion: the peer process dies (SIGKILL) while four streams
// of one pion SCTP association have Writes, Reads, Sends and atomics
// outstanding. pion over a connected UDP socket learns of the death from
// the ICMP port unreachable its next packet draws (there is no ABORT); the
// association ends, every session with it (RFC 5043 §11.3), and every
// endpoint flushes its queues (RFC 5040 §5.4, §6.2.1).
func TestPeerKilled_Pion(t *testing.T) {
	leakCheck(t)
	c := startChild(t, childPion)
	mgr, res := sctpFault(t, c.addr, sctpllp.Config{Stack: pion.Stack(pion.Config{})}, here, func() time.Time { return c.kill(t) })
	// Detected by the ICMP port unreachable on the connected UDP socket.
	assert.ErrorIs(t, mgr.Association().Err(), syscall.ECONNREFUSED)
	t.Logf("pion, SIGKILL: %v", res)
}

// TestPeerKilled_Native is TestPeerKilled_Pion over the project's own SCTP
// stack: its connected UDP socket reports the ICMP port unreachable that
// its packets draw (RFC 6951 §5.5), and the association ends at the
// second one.
func TestPeerKilled_Native(t *testing.T) {
	leakCheck(t)
	c := startChild(t, childNative)
	mgr, res := sctpFault(t, c.addr, sctpllp.Config{Stack: native.Stack(native.Config{}, nil)}, here, func() time.Time { return c.kill(t) })
	assert.ErrorIs(t, mgr.Association().Err(), syscall.ECONNREFUSED)
	t.Logf("native, SIGKILL: %v", res)
}

// TestPeerKilled_MPA: the peer process dies (SIGKILL) with an MPA
// connection carrying outstanding work requests. The kernel resets the
// TCP connection of the dead process; MPA reports "TCP connection lost"
// (RFC 5044 §8 code 1), the endpoint takes it as an LLP error (RFC 5040
// §4.8 layer 2) and flushes everything.
func TestPeerKilled_MPA(t *testing.T) {
	leakCheck(t)
	c := startChild(t, childMPA)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := dialMPA(t, ctx, c.addr, here)
	waitProgress(t, []*load{l}, progressLimit)
	out := totalOutstanding([]*load{l})
	at := c.kill(t)
	res := finish(t, []*load{l}, at, out, flushLimit)
	checkConnectionLost(t, l)
	t.Logf("MPA, SIGKILL: %v", res)
}

// dialMPA connects to addr with MPA and starts a load on the endpoint.
func dialMPA(t *testing.T, ctx context.Context, addr string, in func(func() error) error) *load {
	t.Helper()
	var conn *mpa.Conn
	require.NoError(t, in(func() error {
		var err error
		conn, err = mpa.Dial(ctx, "tcp", addr, &mpa.Config{})
		return err
	}))
	return mpaLoad(t, conn)
}

func mpaLoad(t *testing.T, conn *mpa.Conn) *load {
	t.Helper()
	adv, err := parseAdvert(conn.Params().PeerPrivateData)
	require.NoError(t, err)
	pd := new(rdmap.Device).AllocPD()
	ep, err := pd.NewEndpoint(conn, rdmap.EndpointConfig{SQDepth: 1024, RQDepth: loadRecvs})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = ep.Abort()
		<-ep.Done()
	})
	l := startLoad(t, "mpa", ep, adv, 0, 1)
	l.conn = conn
	require.NoError(t, ep.Start())
	return l
}

// checkConnectionLost asserts the endpoint error after the TCP connection
// failed: an LLP error carrying MPA's "TCP connection lost" (RFC 5044 §8
// code 1).
//
// Which one the kernel sends for a dead process is not ours to choose:
// Linux's tcp_close resets the connection when unread data remains in the
// dead socket's receive queue and otherwise closes it with a FIN, and a
// SIGKILL can land just after the child's reader drained its queue. A FIN
// with no Terminate before it is the peer closing the stream under
// outstanding work (rdmap.ErrPeerClosed); both end the endpoint with
// everything flushed, which finish has already checked.
func checkConnectionLost(t *testing.T, l *load) {
	t.Helper()
	err := l.ep.Err()
	require.Error(t, err)
	if errors.Is(err, rdmap.ErrPeerClosed) {
		t.Logf("the dead peer's socket closed with a FIN, not a reset: %v", err)
		return
	}
	assert.ErrorIs(t, err, mpa.ErrConnectionLost)
	var te *rdmap.TerminateError
	if assert.ErrorAs(t, err, &te) {
		assert.Equal(t, iwarp.Term.MPAConnectionLost, te.Code)
	}
	t.Logf("endpoint error: %v", err)
}
