package dplpmtud

import (
	"bytes"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

func FuzzParseHeartbeatProbe(f *testing.F) {
	f.Add(heartbeatProbe{Nonce: 7, Size: 48}.Append(nil))
	f.Add(heartbeatProbe{Ack: true, Nonce: 1, Size: 1400}.Append(nil))
	f.Add([]byte{4, 0, 0, 8, 0, 1, 0, 4})
	f.Add(heartbeatProbe{Pad: true, Nonce: 3, Size: 1172}.Append(nil))
	f.Add(heartbeatProbe{Ack: true, Pad: true, Nonce: 4, Size: 65504}.Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, n, err := parseHeartbeatProbe(b)
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("consumed %d of %d", n, len(b))
		}
		out := p.Append(nil)
		if len(out) != p.Len() || !p.Pad && len(out) != p.Size-wire.HeaderLen {
			t.Fatalf("re-encoded %d octets for size %d", len(out), p.Size)
		}
		q, _, err := parseHeartbeatProbe(out)
		if err != nil || q != p {
			t.Fatalf("round trip %+v -> %+v (%v)", p, q, err)
		}
	})
}

// FuzzSplitPacket: for any packet and limit, the pieces carry exactly the
// original chunks in order, each piece within the limit unless it is a
// single chunk marked oversize, and every re-built piece checks.
func FuzzSplitPacket(f *testing.F) {
	f.Add(packet([2]int{3, 16}, [2]int{0, 700}, [2]int{0, 700}), 800)
	f.Add(packet([2]int{0, 3000}), 1000)
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 0, 5}, 13)
	f.Fuzz(func(t *testing.T, pkt []byte, limit int) {
		if limit < 0 || limit > 1<<16 {
			return
		}
		var chunks []byte
		pieces := 0
		_, err := splitPacket(pkt, limit, nil, func(p []byte, over bool) error {
			pieces++
			if !over && len(p) > limit {
				t.Fatalf("piece of %d over limit %d not flagged", len(p), limit)
			}
			if len(p) >= wire.HeaderLen {
				chunks = append(chunks, p[wire.HeaderLen:]...)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if pieces == 0 {
			t.Fatal("nothing emitted")
		}
		if len(pkt) >= wire.HeaderLen && !bytes.Equal(chunks, pkt[wire.HeaderLen:]) {
			t.Fatal("chunks changed")
		}
		dataTSNs(pkt, func(uint32) {})
	})
}
