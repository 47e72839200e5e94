package nstest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/netns"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// TestOffloadAcrossRouter: sctp-native sends the segments of 64 KiB DDP
// messages (WriteMsgMore, then WriteMsg) as runs of packets with one
// system call each (UDP_SEGMENT) across a routed path of MTU 1500; the
// kernel cuts the runs into datagrams, so a peer that reads datagram by
// datagram (pion/sctp) receives them as well as one that asks for
// coalesced reads (sctp-native, UDP_GRO). Every octet arrives intact,
// with no IP fragment, and runs were sent.
func TestOffloadAcrossRouter(t *testing.T) {
	for _, peer := range []string{"native", "pion"} {
		t.Run(peer, func(t *testing.T) {
			topo := topology(t, 1500)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// The listener of either stack, as an address and an accept.
			var addr string
			var accept func(context.Context) (backend.Transport, error)
			require.NoError(t, netns.In(topo.H2, func() error {
				laddr := net.JoinHostPort(topo.H2Addr, "0")
				var ln interface {
					Addr() net.Addr
					Close() error
				}
				if peer == "native" {
					l, err := native.Stack(native.Config{}, nil).Listen(laddr)
					if err != nil {
						return err
					}
					ln, accept = l, l.Accept
				} else {
					l, err := pion.Stack(pion.Config{}).Listen(laddr)
					if err != nil {
						return err
					}
					ln, accept = l, l.Accept
				}
				t.Cleanup(func() { _ = ln.Close() })
				addr = ln.Addr().String()
				return nil
			}))
			acc := make(chan backend.Transport, 1)
			go func() {
				s, err := accept(ctx)
				if err != nil {
					s = nil // not a typed nil in the interface
				}
				acc <- s
			}()
			var cl nativeTransport
			require.NoError(t, netns.In(topo.H1, func() (err error) {
				cl, err = dialNative(ctx, addr)
				return err
			}))
			t.Cleanup(func() { _ = cl.Abort() })
			sv := <-acc
			require.NotNil(t, sv)
			t.Cleanup(func() { _ = sv.Abort() })

			got, bad := startChecking(cl, sv)
			// The path MTU search (RFC 8899) first: runs are of the
			// packets of the searched size.
			want := (1500 - 20 - 8 - 12 - 16) &^ 3
			require.Eventually(t, func() bool { return cl.MaxMessage() == want }, 10*time.Second, time.Millisecond)

			before, err := topo.Fragments()
			require.NoError(t, err)
			msg := make([]byte, cl.MaxMessage())
			for i := range msg {
				msg[i] = byte(i)
			}
			const perMessage = 44 // a 64 KiB DDP message at this MTU
			n := (8 << 20) / len(msg)
			for i := range n {
				if i%perMessage == perMessage-1 || i == n-1 {
					require.NoError(t, cl.WriteMsg(1, backend.PPIDSegment, msg))
				} else {
					require.NoError(t, cl.WriteMsgMore(1, backend.PPIDSegment, msg))
				}
			}
			require.Eventually(t, func() bool { return got.Load() == int64(n*len(msg)) }, 30*time.Second, 10*time.Millisecond,
				"%d of %d octets", got.Load(), n*len(msg))
			assert.Zero(t, bad.Load(), "messages corrupted")
			after, err := topo.Fragments()
			require.NoError(t, err)
			assert.Equal(t, before.Total(), after.Total(), "IP fragments: before %+v after %+v", before, after)
			st := cl.Stats()
			t.Logf("%s peer: %d packets in %d multi-packet sends, %d retransmissions", peer, st.PacketsSent, st.OffloadSends, st.Retransmits)
			assert.Positive(t, st.OffloadSends, "runs of packets across the router")
			if ns, ok := sv.(nativeTransport); ok {
				t.Logf("%s peer: %d coalesced reads of %d packets", peer, ns.Stats().OffloadReceives, ns.Stats().PacketsReceived)
			}
		})
	}
}
