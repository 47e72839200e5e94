//go:build linux

package faults

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	nsctp "github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// lossDetect is the failure-detection bound given to both LLPs when the
// path goes black: pion.Config.DeadPeerTimeout and TCP_USER_TIMEOUT.
const lossDetect = 2 * time.Second

// TestAssociationLost_Pion: the path between the namespaces drops every
// packet while four streams have many work requests outstanding. Nothing
// tells pion (no ABORT, no ICMP): pion.Config.DeadPeerTimeout declares the
// peer dead after lossDetect of silence and aborts the association; every
// session ends with it (RFC 5043 §11.3) and every endpoint flushes (RFC
// 5040 §5.4, §6.2.1), all within lossDetect plus a margin.
func TestAssociationLost_Pion(t *testing.T) {
	leakCheck(t)
	l := newLink(t, impairment{Name: "clean"})
	cfg := sctpllp.Config{Stack: pion.Stack(pion.Config{DeadPeerTimeout: lossDetect})}
	addr, _ := pionServer(t, net.JoinHostPort(l.addrB, "0"), cfg, l.inB)
	mgr, res := sctpFault(t, addr, cfg, l.inA, blackholeNow(t, l))
	assert.ErrorIs(t, mgr.Association().Err(), backend.ErrPeerUnresponsive)
	assert.GreaterOrEqual(t, res.toErr, lossDetect-100*time.Millisecond, "declared dead before DeadPeerTimeout")
	t.Logf("pion, path lost (DeadPeerTimeout %v): %v", lossDetect, res)
}

// TestAssociationLost_Native is TestAssociationLost_Pion over the project's
// own SCTP stack, whose dead-peer detection is RFC 9260's: Association.
// Max.Retrans consecutive T3-rtx expiries (§8.1), the RTO doubling from
// RTO.Min up to RTO.Max (§6.3.3 E2). With RTO.Min 100 ms, RTO.Max 400 ms
// and 5 retransmissions the association is declared dead about 1.9 s after
// the path goes black.
func TestAssociationLost_Native(t *testing.T) {
	leakCheck(t)
	l := newLink(t, impairment{Name: "clean"})
	cfg := sctpllp.Config{Stack: native.Stack(native.Config{MaxRetrans: 5,
		RTO: nsctp.RTOConfig{Initial: 200 * time.Millisecond, Min: 100 * time.Millisecond, Max: 400 * time.Millisecond}}, nil)}
	addr, _ := pionServer(t, net.JoinHostPort(l.addrB, "0"), cfg, l.inB)
	mgr, res := sctpFault(t, addr, cfg, l.inA, blackholeNow(t, l))
	assert.ErrorIs(t, mgr.Association().Err(), backend.ErrPeerUnresponsive)
	assert.GreaterOrEqual(t, res.toErr, 900*time.Millisecond, "declared dead before five retransmissions")
	t.Logf("native, path lost (Max.Retrans 5, RTO 100-400 ms): %v", res)
}

// blackholeNow is the fault of the path going black.
func blackholeNow(t *testing.T, l *link) func() time.Time {
	return func() time.Time {
		at := time.Now()
		l.blackhole(t)
		return at
	}
}

// TestConnectionLost_MPA: the same for MPA over TCP. TCP gives up on
// unacknowledged data after TCP_USER_TIMEOUT (RFC 5482; set here to
// lossDetect, the Linux default would be ~15 min of retransmissions): the
// read fails with ETIMEDOUT, MPA reports "TCP connection lost" (RFC 5044
// §8 code 1) and the endpoint flushes everything.
func TestConnectionLost_MPA(t *testing.T) {
	leakCheck(t)
	l := newLink(t, impairment{Name: "clean"})
	addr, _ := mpaServer(t, net.JoinHostPort(l.addrB, "0"), l.inB)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ld := dialMPA(t, ctx, addr, l.inA)
	setUserTimeout(t, ld, lossDetect)
	waitProgress(t, []*load{ld}, progressLimit)
	out := totalOutstanding([]*load{ld})
	at := time.Now()
	l.blackhole(t)
	res := finish(t, []*load{ld}, at, out, flushLimit)
	checkConnectionLost(t, ld)
	assert.ErrorIs(t, ld.ep.Err(), syscall.ETIMEDOUT)
	t.Logf("MPA, path lost (TCP_USER_TIMEOUT %v): %v", lossDetect, res)
}

// setUserTimeout sets TCP_USER_TIMEOUT and keepalive on the load's TCP
// connection.
func setUserTimeout(t *testing.T, ld *load, d time.Duration) {
	t.Helper()
	tc, ok := ld.conn.NetConn().(*net.TCPConn)
	require.True(t, ok)
	require.NoError(t, tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: d / 4, Interval: d / 4, Count: 4}))
	rc, err := tc.SyscallConn()
	require.NoError(t, err)
	var serr error
	require.NoError(t, rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	}))
	require.NoError(t, serr)
}
