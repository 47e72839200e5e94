package pion

import (
	"net/netip"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// FuzzHandshakeUnknown: any datagram from an unknown address is handled
// by the stateless handshake without a panic, and whatever it sends is a
// well-formed SCTP packet with a good CRC32c.
func FuzzHandshakeUnknown(f *testing.F) {
	for _, ali := range []bool{true, false} {
		in := wire.Init{InitiateTag: 7, ARwnd: 65536, OutboundStreams: 10, InboundStreams: 10, InitialTSN: 77}
		in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, ali
		b := in.Append(wire.AppendHeader(nil, wire.Header{SrcPort: 6000, DstPort: 5000}))
		wire.SetChecksum(b)
		f.Add(b)
	}
	ce := wire.AppendHeader(nil, wire.Header{SrcPort: 1, DstPort: 2, VerificationTag: 3})
	ce = (&wire.CookieEcho{Cookie: make([]byte, 108)}).Append(ce)
	wire.SetChecksum(ce)
	f.Add(ce)
	sa := wire.AppendHeader(nil, wire.Header{SrcPort: 1, DstPort: 2, VerificationTag: 3})
	sa = append(sa, byte(wire.ChunkShutdownAck), 0, 0, 4)
	wire.SetChecksum(sa)
	f.Add(sa)
	h := newHandshaker(Config{}.withDefaults())
	from := netip.MustParseAddrPort("127.0.0.1:9")
	f.Fuzz(func(t *testing.T, b []byte) {
		s, _ := h.unknown(b, from, func(out []byte) {
			if _, err := wire.ParsePacket(out); err != nil {
				t.Fatalf("sent a bad packet: %v", err)
			}
		})
		if s != nil {
			t.Fatalf("an association from fuzz input")
		}
		if len(b) >= wire.HeaderLen+4 {
			_ = tagOK(b, &snapInit{})
		}
	})
}
