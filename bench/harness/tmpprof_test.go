package harness

import (
	"context"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

func TestTmpRawNative(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nat, err := newRawSCTP(ctx, transport.SCTPNative, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer nat.close()
	const size = 64 << 10
	total := int64(1 << 30)
	for i := 0; i < 3; i++ {
		d2, _ := nat.throughput(size, total)
		m := nat.cl.MaxMessage()
		d3, _ := nat.throughput(m, total/int64(m)*int64(m))
		nat.echo.Store(false)
		nat.got.Store(0)
		nat.want.Store(total)
		buf := make([]byte, size)
		start := time.Now()
		for sent := int64(0); sent < total; sent += size {
			if err := nat.cl.WriteMsg(1, 16, buf); err != nil {
				t.Fatal(err)
			}
		}
		<-nat.arrive
		d4 := time.Since(start)
		t.Logf("native 64K split %.2f Gbit/s, %d-octet messages %.2f, 64K fragmented by SCTP %.2f", gbps(total, d2), m, gbps(total/int64(m)*int64(m), d3), gbps(total, d4))
	}
	st := nat.cl.(*native.Transport).Stats()
	t.Logf("%+v", st)
	t.Logf("packets per message %.3f, data chunks per message %.3f", float64(st.PacketsSent)/float64(st.MessagesSent), float64(st.DataChunksSent)/float64(st.MessagesSent))
}
