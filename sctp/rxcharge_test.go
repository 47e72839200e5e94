package sctp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rxHeld returns what a's receive side has charged to its share.
func rxHeld(a *Association) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rxAcct.Held()
}

// A message delivered from its packet's buffer is charged what that
// buffer holds, and the same is released when it is delivered. A
// listener copies a packet into a buffer of its size class: charging a
// full read buffer for it and releasing the class leaked the difference
// on every such message until the window closed for good (RFC 9260 §6.2:
// a_rwnd comes back as the application consumes). A 32 KiB DDP segment
// is such a message: above copyBelow, its packet in the 32 KiB class.
// Each message goes alone (no bundling), both directions.
func TestRFC9260_6_2_ReceiveChargeReturnsToZero(t *testing.T) {
	const buf = 256 << 10
	cli, srv, cr, sr := pair(t, &Config{ReceiveBuffer: buf})
	const msgs = 64 // 64 x 32 KiB: eight times the receive buffer
	for i := 0; i < msgs; i++ {
		n := copyBelow + i%128
		require.NoError(t, cli.WriteMsg(1, 16, make([]byte, n)))
		require.NoError(t, srv.WriteMsg(1, 16, make([]byte, n)))
		sr.wait(t, i+1)
		cr.wait(t, i+1)
	}
	for name, a := range map[string]*Association{"dialer": cli, "listener's": srv} {
		require.Eventually(t, func() bool { return rxHeld(a) == 0 }, 10*time.Second, time.Millisecond,
			"the %s association still charges %d octets with nothing held", name, rxHeld(a))
		a.mu.Lock()
		w := a.rwnd()
		a.mu.Unlock()
		require.EqualValues(t, buf, w, "the %s association offers its whole receive buffer again", name)
	}
}
