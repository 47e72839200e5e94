package pmtu

import (
	"bytes"
	"testing"
)

func FuzzParseCommonHeader(f *testing.F) {
	f.Add([]byte{0x13, 0x88, 0x13, 0x89, 0xde, 0xad, 0xbe, 0xef, 4, 3, 2, 1})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseCommonHeader(b)
		if err != nil {
			return
		}
		if n != 12 || !bytes.Equal(h.Append(nil), b[:12]) {
			t.Fatalf("round trip: %x", b[:12])
		}
	})
}

func FuzzParseChunkHeader(f *testing.F) {
	f.Add([]byte{3, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 3, 0, 17})
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseChunkHeader(b)
		if err != nil {
			return
		}
		if n > len(b) || n < int(h.Length) || n%4 != 0 || !bytes.Equal(h.Append(nil), b[:4]) {
			t.Fatalf("bad parse %+v n=%d len=%d", h, n, len(b))
		}
	})
}

func FuzzParseHeartbeatProbe(f *testing.F) {
	f.Add(HeartbeatProbe{Nonce: 7, Size: 48}.Append(nil))
	f.Add(HeartbeatProbe{Ack: true, Nonce: 1, Size: 1400}.Append(nil))
	f.Add([]byte{4, 0, 0, 8, 0, 1, 0, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, n, err := ParseHeartbeatProbe(b)
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("consumed %d of %d", n, len(b))
		}
		out := p.Append(nil)
		if len(out) != p.Size-SCTPCommonHeaderLen {
			t.Fatalf("re-encoded %d octets for size %d", len(out), p.Size)
		}
		q, _, err := ParseHeartbeatProbe(out)
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
		_, err := SplitPacket(pkt, limit, nil, func(p []byte, over bool) error {
			pieces++
			if !over && len(p) > limit {
				t.Fatalf("piece of %d over limit %d not flagged", len(p), limit)
			}
			if len(p) >= SCTPCommonHeaderLen {
				chunks = append(chunks, p[SCTPCommonHeaderLen:]...)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if pieces == 0 {
			t.Fatal("nothing emitted")
		}
		if len(pkt) >= SCTPCommonHeaderLen && !bytes.Equal(chunks, pkt[SCTPCommonHeaderLen:]) {
			t.Fatal("chunks changed")
		}
		DataTSNs(pkt, func(uint32) {})
	})
}
