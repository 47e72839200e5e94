//go:build linux

package pmtu

import (
	"net/netip"
	"testing"
)

// FuzzParseSCTPKernelStructs: the kernel structure decoders never panic
// and reject short images.
func FuzzParseSCTPKernelStructs(f *testing.F) {
	f.Add(make([]byte, SCTPStatusLen))
	f.Add(AppendPaddrinfoRequest(nil, netip.MustParseAddrPort("[fd00::1]:5000")))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ParseSCTPStatus(b); (err == nil) != (len(b) >= SCTPStatusLen) {
			t.Fatalf("sctp_status of %d octets: %v", len(b), err)
		}
		if _, err := ParsePaddrinfoMTU(b); (err == nil) != (len(b) >= SCTPPaddrinfoLen) {
			t.Fatalf("sctp_paddrinfo of %d octets: %v", len(b), err)
		}
	})
}
