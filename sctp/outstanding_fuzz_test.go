package sctp

import (
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/pathmgr"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// FuzzOutstandingBoundedScan drives two queues with the same operations
// (chunks added, SACKs with arbitrary cum acks and Gap Ack Blocks, in and
// out of Fast Recovery, retransmissions of what is marked, T3-rtx
// expiries, of every destination or one, a multihomed queue's
// destinations and their Fast Recovery, §7.2), one scanning only the TSNs that can need anything on a SACK
// and one scanning everything outstanding, and requires the same results
// and the same state of every chunk after each step (RFC 9260 §6.2.1,
// §7.2.4).
func FuzzOutstandingBoundedScan(f *testing.F) {
	f.Add([]byte{0x10, 0x10, 0x10, 0x10, 0x01, 0x02, 0x03, 0x21, 0x12, 0x03, 0x41, 0x80})
	f.Add([]byte{0x1f, 0x1f, 0x23, 0x35, 0x01, 0x05, 0x07, 0x23, 0x00, 0x02, 0x09, 0x0b, 0x60, 0x70, 0x23, 0x01, 0x03, 0x04})
	f.Add([]byte{0x1f, 0x1f, 0x1f, 0x21, 0x02, 0x10, 0x12, 0x22, 0x00, 0x01, 0x01, 0x02, 0x13, 0x60, 0x22, 0x03, 0x01, 0x01, 0x02, 0x14})
	f.Add([]byte{0x10, 0x71, 0x13, 0x75, 0x05, 0x21, 0x1f, 0x01, 0x2a, 0x02, 0x00, 0x03, 0x63, 0x40, 0x21, 0x01, 0x06, 0x01})
	f.Fuzz(func(t *testing.T, ops []byte) {
		t0 := time.Unix(1000, 0)
		const init = 0xfffffff0 // the TSNs wrap
		a, b := newOutstandingQueue(init, 256), newOutstandingQueue(init, 256)
		b.fullScan = true
		var aa, af, ba, bf [pathmgr.DefaultMaxPaths]int
		a.pathAcked, a.pathFlight, b.pathAcked, b.pathFlight = &aa, &af, &ba, &bf
		now := t0
		for i := 0; i < len(ops); i++ {
			op := ops[i]
			now = now.Add(time.Millisecond)
			switch op >> 4 {
			case 0, 1: // add 1..16 chunks
				for range int(op&0xf) + 1 {
					ta, oka := a.Add(100+int(op), now)
					tb, okb := b.Add(100+int(op), now)
					if ta != tb || oka != okb {
						t.Fatalf("add: %d %v vs %d %v", ta, oka, tb, okb)
					}
				}
			case 2, 3: // SACK: cum = cum + next octet; op&7 gap blocks from the following octets
				if i+1 >= len(ops) {
					return
				}
				i++
				cum := a.CumTSN() + uint32(ops[i]%32)
				var gaps []wire.GapAckBlock
				prev := uint16(1)
				for g := 0; g < int(op&7) && i+2 < len(ops); g++ {
					start := prev + uint16(ops[i+1]%8)
					end := start + uint16(ops[i+2]%8)
					i += 2
					gaps = append(gaps, wire.GapAckBlock{Start: start, End: end})
					prev = end + 2
				}
				fr := op&8 != 0
				ra := a.OnSACK(cum, gaps, nil, 1<<20, fr, now)
				rb := b.OnSACK(cum, gaps, nil, 1<<20, fr, now)
				if ra != rb {
					t.Fatalf("SACK cum %d gaps %v fr %v:\n bounded %+v\n full    %+v", cum, gaps, fr, ra, rb)
				}
			case 4, 5: // retransmit what is marked
				for tsn, _, ok := a.FirstMarked(); ok; tsn, _, ok = a.NextMarked(tsn) {
					sa, oka := a.OnRetransmit(tsn, now)
					sb, okb := b.OnRetransmit(tsn, now)
					if sa != sb || oka != okb {
						t.Fatalf("retransmit %d", tsn)
					}
				}
			case 6: // T3-rtx expiry, of one destination if op&1
				if op&1 != 0 {
					ma, na := a.MarkPathForRetransmit(op >> 1 & 3)
					mb, nb := b.MarkPathForRetransmit(op >> 1 & 3)
					if ma != mb || na != nb {
						t.Fatal("mark path")
					}
				} else if a.MarkAllForRetransmit() != b.MarkAllForRetransmit() {
					t.Fatal("mark all")
				}
			case 7: // DATA to destination op&3; destinations in Fast Recovery
				a.path, b.path = op&3, op&3
				a.pathFR, b.pathFR = uint16(op>>2&3), uint16(op>>2&3)
			}
			if af != bf || aa != ba || a.pathLost != b.pathLost || a.pathLive != b.pathLive {
				t.Fatalf("per-destination state differs after op %#x", op)
			}
			if a.CumTSN() != b.CumTSN() || a.NextTSN() != b.NextTSN() || a.Marked() != b.Marked() {
				t.Fatalf("queues differ after op %#x", op)
			}
			for tsn := a.CumTSN() + 1; tsn != a.NextTSN(); tsn++ {
				sa, sta, ma, _ := a.Chunk(tsn)
				sb, stb, mb, _ := b.Chunk(tsn)
				if sa != sb || sta != stb || ma != mb {
					t.Fatalf("chunk %d: %d %v %d vs %d %v %d", tsn, sa, sta, ma, sb, stb, mb)
				}
			}
		}
	})
}
