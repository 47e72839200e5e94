package sctpllp

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// A session over sctp-native, which sends runs of equal packets, reports
// each segment's wire size (package llp's optional WireSize): its DDP-SSN and the segment in a
// DATA chunk padded to four octets (RFC 9260 §3.2), so that DDP cuts
// messages into segments of one packet size; over pion, which does not,
// 0.
func TestSessionWireSize(t *testing.T) {
	for name, stack := range map[string]backend.Stack{"native": native.Stack(native.Config{}, nil), "pion": pion.Stack(pion.Config{})} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := Listen("127.0.0.1:0", Config{Stack: stack})
			require.NoError(t, err)
			ch := make(chan *Association, 1)
			go func() {
				a, _ := l.Accept(ctx)
				ch <- a
			}()
			c, err := Dial(ctx, l.Addr(), Config{Stack: stack})
			require.NoError(t, err)
			s := <-ch
			require.NotNil(t, s)
			_ = l.Close()
			t.Cleanup(func() { _ = c.Close(); _ = s.Close() })
			go func() {
				if in, err := s.Accept(ctx); err == nil {
					_, _ = in.Accept(AcceptParams{})
				}
			}()
			cs, err := c.Open(ctx, 1, OpenRequest{})
			require.NoError(t, err)
			e, ok := cs.(interface{ WireSize(int) int })
			require.True(t, ok, "a session has WireSize")
			if name == "pion" {
				assert.Zero(t, e.WireSize(1000))
				return
			}
			for n, want := range map[int]int{1000: 1020, 1001: 1020, 1002: 1020, 1003: 1024, 14 + 1394: 1428, 14 + 1395: 1428} {
				assert.Equal(t, want, e.WireSize(n), "%d octets", n)
			}
		})
	}
}
