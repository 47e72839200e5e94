package native

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/transporttest"
)

// The native stack and pion/sctp interoperate in both directions: the
// native stack's INIT, cookie, DATA, SACK, RE-CONFIG answers and SHUTDOWN
// as pion takes them, and pion's as the native stack takes them. pion
// reads at most 8192-octet packets, so the native end uses a path MTU of
// 8192 (the packets carry fragments of the larger messages, RFC 9260
// §6.9, in both directions).

const pionInteropMTU = 8192

func interopExchange(t *testing.T, cl, sv backend.Transport) {
	t.Helper()
	type msg struct {
		sid  uint16
		ppid uint32
		b    []byte
	}
	cgot, sgot := make(chan msg, 64), make(chan msg, 64)
	cdone, sdone := make(chan error, 1), make(chan error, 1)
	cl.Start(func(sid uint16, ppid uint32, b []byte) { cgot <- msg{sid, ppid, bytes.Clone(b)} }, func(err error) { cdone <- err })
	sv.Start(func(sid uint16, ppid uint32, b []byte) { sgot <- msg{sid, ppid, bytes.Clone(b)} }, func(err error) { sdone <- err })
	big := bytes.Repeat([]byte("interop!"), 20000/8)
	next := func(ch chan msg) msg {
		select {
		case m := <-ch:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("message lost")
			return msg{}
		}
	}
	for i := range 20 {
		require.NoError(t, cl.WriteMsg(uint16(i%5+1), backend.PPIDSegment, []byte{byte(i)}, big[:min(100*i+1, 8000)]))
		require.NoError(t, sv.WriteMsg(uint16(i%3+1), backend.PPIDControl, big[:min(200*i+1, 8000)]))
	}
	// Unordered messages on several streams: compare as sets.
	var sl, cl2 []int
	for range 20 {
		m := next(sgot)
		assert.Equal(t, backend.PPIDSegment, m.ppid)
		sl = append(sl, len(m.b))
		m = next(cgot)
		assert.Equal(t, backend.PPIDControl, m.ppid)
		cl2 = append(cl2, len(m.b))
	}
	var wantS, wantC []int
	for i := range 20 {
		wantS, wantC = append(wantS, 100*i+2), append(wantC, 200*i+1)
	}
	assert.ElementsMatch(t, wantS, sl)
	assert.ElementsMatch(t, wantC, cl2)
	// pion refuses a message above its MaxMessage; the native stack
	// fragments one (RFC 9260 §6.9) and pion reassembles it.
	cbig, sbig := big, big
	if cl.Kind() != kind {
		cbig = big[:cl.MaxMessage()]
	}
	if sv.Kind() != kind {
		sbig = big[:sv.MaxMessage()]
	}
	require.NoError(t, cl.WriteMsg(9, backend.PPIDSegment, cbig))
	assert.Equal(t, cbig, next(sgot).b)
	require.NoError(t, sv.WriteMsg(9, backend.PPIDSegment, sbig))
	assert.Equal(t, sbig, next(cgot).b)
	require.NoError(t, cl.Close())
	for _, ch := range []chan error{cdone, sdone} {
		select {
		case err := <-ch:
			assert.NoError(t, err, "graceful SHUTDOWN across stacks")
		case <-time.After(15 * time.Second):
			t.Fatal("no end after Close")
		}
	}
}

// interopConfigs are the native end's settings: an MTU set by hand to
// what pion reads, and the defaults, where RFC 8899 probing finds it: the
// route's 65536 on loopback is lost once (pion reads 8 KiB of it), the
// table walk confirms 8220 (pion's 8192-octet packets over UDP/IPv4).
var interopConfigs = map[string]Config{"mtu8192": {MTU: pionInteropMTU}, "defaults": {}}

// waitPionSize waits, at defaults, until the native end's PLPMTUD has
// found what pion reads.
func waitPionSize(t *testing.T, nt backend.Transport, cfg Config) {
	t.Helper()
	if cfg.MTU != 0 {
		return
	}
	n := nt.(*transport)
	require.Eventually(t, func() bool { return n.PLPMTUD().PLPMTU == 8220 }, 20*time.Second, 5*time.Millisecond,
		"%+v", n.PLPMTUD())
	assert.False(t, n.PLPMTUD().PAD, "pion drops a packet with a PAD chunk: padded HEARTBEATs only")
}

func TestNativeDialsPion(t *testing.T) {
	for name, cfg := range interopConfigs {
		t.Run(name, func(t *testing.T) {
			ln, err := pion.Stack(pion.Config{}).Listen("127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			cl, sv := transporttest.Establish(t,
				func(ctx context.Context) (backend.Transport, error) { return ln.Accept(ctx) },
				func(ctx context.Context) (backend.Transport, error) {
					return dial(ctx, ln.Addr().String(), cfg)
				})
			assert.Equal(t, kind, cl.Kind())
			assert.Equal(t, "sctp-pion", sv.Kind())
			waitPionSize(t, cl, cfg)
			interopExchange(t, cl, sv)
		})
	}
}

func TestPionDialsNative(t *testing.T) {
	for name, cfg := range interopConfigs {
		t.Run(name, func(t *testing.T) {
			ln, err := listen("127.0.0.1:0", cfg)
			require.NoError(t, err)
			defer ln.Close()
			cl, sv := transporttest.Establish(t,
				func(ctx context.Context) (backend.Transport, error) { return ln.Accept(ctx) },
				func(ctx context.Context) (backend.Transport, error) {
					return pion.Stack(pion.Config{}).Dial(ctx, ln.Addr().String())
				})
			assert.Equal(t, "sctp-pion", cl.Kind())
			assert.Equal(t, kind, sv.Kind())
			waitPionSize(t, sv, cfg)
			interopExchange(t, cl, sv)
		})
	}
}
