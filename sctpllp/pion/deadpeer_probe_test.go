package pion

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// recordConn keeps a copy of every packet written through it.
type recordConn struct {
	net.Conn
	mu   sync.Mutex
	pkts [][]byte
}

func (r *recordConn) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.pkts = append(r.pkts, append([]byte(nil), p...))
	r.mu.Unlock()
	return r.Conn.Write(p)
}

// countHeartbeats counts the HEARTBEAT chunks r has written.
func countHeartbeats(r *recordConn) int {
	n := 0
	for _, p := range r.packets() {
		if pkt, err := wire.ParsePacket(p); err == nil {
			it := pkt.Chunks()
			for c, ok := it.Next(); ok; c, ok = it.Next() {
				if c.Type == wire.ChunkHeartbeat {
					n++
				}
			}
		}
	}
	return n
}

func (r *recordConn) packets() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.pkts...)
}

// TestPion_IdleProbeIsNotData_RFC5043_5_1: on a DDP association every DATA
// chunk carries a DDP Segment (PPID 16) or DDP Stream Session Control
// (PPID 17) (RFC 5043 §5.1, §5.2) and is unordered (§10, U=1). The pion
// backend's dead-peer detection must therefore not probe an idle peer with
// DATA: it sends SCTP HEARTBEATs with a Heartbeat Info parameter (RFC 9260
// §3.3.5, §8.3), which a live peer answers, so the idle association
// survives many probe intervals.
func TestPion_IdleProbeIsNotData_RFC5043_5_1(t *testing.T) {
	// A probe every 250 ms of silence; 1 s is wide enough that a loaded
	// host's scheduling delays do not make an answered probe late.
	const timeout = time.Second
	cfg := Config{DeadPeerTimeout: timeout}
	ct, st, cerr, serr, rc, rs := pionPipePair(t, cfg, cfg)
	require.NoError(t, cerr)
	require.NoError(t, serr)
	var got atomic.Int32
	ended := make(chan error, 2)
	st.Start(func(uint16, uint32, []byte) { got.Add(1) }, func(err error) { ended <- err })
	ct.Start(func(uint16, uint32, []byte) {}, func(err error) { ended <- err })
	require.NoError(t, ct.WriteMsg(1, backend.PPIDSegment, []byte("before")))
	require.Eventually(t, func() bool { return got.Load() == 1 }, 5*time.Second, 5*time.Millisecond)

	// Idle through eight probes (at least a timeout without data):
	// only probes and their answers.
	require.Eventually(t, func() bool { return countHeartbeats(rc)+countHeartbeats(rs) >= 8 }, 60*time.Second, 10*time.Millisecond)
	select {
	case err := <-ended:
		t.Fatalf("idle association with a live peer ended: %v", err)
	default:
	}
	require.NoError(t, ct.WriteMsg(1, backend.PPIDSegment, []byte("after")))
	require.Eventually(t, func() bool { return got.Load() == 2 }, 5*time.Second, 5*time.Millisecond)

	heartbeats := 0
	for side, r := range map[string]*recordConn{"client": rc, "server": rs} {
		for _, p := range r.packets() {
			pkt, err := wire.ParsePacket(p)
			require.NoError(t, err, "%s sent a packet that does not parse", side)
			it := pkt.Chunks()
			for c, ok := it.Next(); ok; c, ok = it.Next() {
				switch c.Type {
				case wire.ChunkData:
					d, err := wire.ParseData(c)
					require.NoError(t, err)
					assert.True(t, d.Unordered, "%s: DATA on stream %d with U=0 (RFC 5043 §10)", side, d.StreamID)
					assert.Contains(t, []uint32{backend.PPIDSegment, backend.PPIDControl}, d.PPID,
						"%s: DATA with PPID %d on stream %d (RFC 5043 §5.1)", side, d.PPID, d.StreamID)
					assert.NotEqual(t, uint16(0xFFFF), d.StreamID, "%s: DATA on the sentinel stream", side)
				case wire.ChunkHeartbeat:
					// RFC 9260 §3.3.5: the Heartbeat Info parameter is
					// mandatory.
					_, err := wire.ParseHeartbeat(c)
					assert.NoError(t, err, "%s: HEARTBEAT without Heartbeat Info", side)
					heartbeats++
				}
			}
			require.NoError(t, it.Err(), "%s sent a packet that does not parse", side)
		}
	}
	assert.Greater(t, heartbeats, 4, "an idle peer is probed with HEARTBEATs")
}
