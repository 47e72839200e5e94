package pion

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/seq"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// rtxCounter counts the retransmitted DATA chunks among the packets a
// stack writes: a DATA chunk whose TSN is not above the highest TSN
// written before is a retransmission (RFC 9260 §6.3.3 T3-rtx, §7.2.4 Fast
// Retransmit). pion writes from one goroutine; the atomics only make the
// counter safe to read from another.
type rtxCounter struct {
	seen    atomic.Bool
	highest atomic.Uint32
	rtx     atomic.Uint64
}

// observe scans one outgoing SCTP packet's chunk headers; nothing is
// allocated.
func (r *rtxCounter) observe(pkt []byte) {
	if len(pkt) <= wire.HeaderLen {
		return
	}
	it := wire.NewChunkIter(pkt[wire.HeaderLen:])
	for {
		c, ok := it.Next()
		if !ok {
			return
		}
		if c.Type != wire.ChunkData || len(c.Value) < 4 {
			continue
		}
		tsn := binary.BigEndian.Uint32(c.Value)
		switch {
		case !r.seen.Load():
			r.seen.Store(true)
			r.highest.Store(tsn)
		case seq.TSNGreater(tsn, r.highest.Load()):
			r.highest.Store(tsn)
		default:
			r.rtx.Add(1)
		}
	}
}

// count returns the retransmissions seen.
func (r *rtxCounter) count() uint64 { return r.rtx.Load() }
