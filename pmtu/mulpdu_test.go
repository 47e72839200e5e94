package pmtu_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sctp-rdma/sctp-rdma/pmtu"
)

// TestSCTPMULPDU_RFC5043Sec9 checks the MULPDU arithmetic of RFC 5043 §9
// (IP + [UDP] + SCTP common header + DATA chunk header + DDP-SSN +
// bundling reserve, floor 4, never below 516).
func TestSCTPMULPDU_RFC5043Sec9(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pmtu      int
		ipv6, udp bool
		maxMsg    int
		mulpdu    int
	}{
		{"ipv4 udp 1500", 1500, false, true, 1444, 1410},
		{"ipv4 udp 1280", 1280, false, true, 1224, 1190},
		{"ipv4 udp 8220 (pion max)", 8220, false, true, 8164, 8130},
		{"ipv4 native 1500", 1500, false, false, 1452, 1418},
		{"ipv6 udp 1280", 1280, true, true, 1204, 1170},
		{"ipv6 native 9000", 9000, true, false, 8932, 8898},
		{"odd mtu rounds down to 4", 1499, false, true, 1440, 1406},
		{"tiny path clamps to 516", 576, false, true, 520, 516},
		{"zero", 0, false, true, 0, 516},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.maxMsg, pmtu.SCTPMaxMessage(tc.pmtu, tc.ipv6, tc.udp))
			assert.Equal(t, tc.mulpdu, pmtu.SCTPMULPDU(tc.pmtu, tc.ipv6, tc.udp))
		})
	}
	m := pmtu.MinSCTPPathMTU(false, true)
	assert.GreaterOrEqual(t, pmtu.SCTPMaxMessage(m, false, true)-pmtu.DDPSSNLen-pmtu.BundlingReserve, 516)
	assert.Equal(t, 516, pmtu.SCTPMULPDU(m-1, false, true), "clamped just below")
	assert.Less(t, pmtu.SCTPMaxMessage(m-1, false, true)-pmtu.DDPSSNLen-pmtu.BundlingReserve, 516)
}

// TestTCPMSS_RFC9293_3_7_1: the MSS a sender uses excludes the options.
func TestTCPMSS_RFC9293_3_7_1(t *testing.T) {
	assert.Equal(t, 1448, pmtu.TCPMSS(1500, false, 12))
	assert.Equal(t, 1220, pmtu.TCPMSS(1280, true, 0))
}
