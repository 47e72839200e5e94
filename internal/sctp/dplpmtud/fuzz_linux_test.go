//go:build linux

package dplpmtud

import (
	"net/netip"
	"testing"
)

// FuzzParseSCTPKernelStructs: the kernel structure decoders never panic
// and reject short images.
func FuzzParseSCTPKernelStructs(f *testing.F) {
	f.Add(make([]byte, sctpStatusLen))
	f.Add(appendPaddrinfoRequest(nil, netip.MustParseAddrPort("[fd00::1]:5000")))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := parseSCTPStatus(b); (err == nil) != (len(b) >= sctpStatusLen) {
			t.Fatalf("sctp_status of %d octets: %v", len(b), err)
		}
		if _, err := parsePaddrinfoMTU(b); (err == nil) != (len(b) >= paddrinfoLen) {
			t.Fatalf("sctp_paddrinfo of %d octets: %v", len(b), err)
		}
	})
}
