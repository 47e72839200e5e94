//go:build linux

package wireshark

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/secure/securetest"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// frames counts the packets of pcap that match filter, with the decode-as
// rule decodeAs (tshark -d) and the RFC 5043 dissector loaded.
func frames(t *testing.T, pcap, decodeAs, filter string) int {
	t.Helper()
	args := []string{"-r", pcap, "-Y", filter, "-T", "fields", "-e", "frame.number"}
	if decodeAs != "" {
		args = append([]string{"-d", decodeAs}, args...)
	}
	out, err := tsharkWithPlugin(t, args...).Output()
	require.NoError(t, err, "tshark %v", args)
	return len(strings.Fields(string(out)))
}

// TestSecureModesHideDDP captures the loopback wire (tshark on lo) while
// every bench test runs over sctp-native inside DTLS and over MPA inside
// TLS 1.3, and decodes it: DTLS and TLS application data, and not one SCTP
// chunk, DDP segment, RDMAP message or MPA frame in the clear (RFC 5040
// §8: confidentiality below DDP). The same runs in the clear decode as
// DDP, which shows the check can see it.
func TestSecureModesHideDDP(t *testing.T) {
	ensureTshark(t)
	sd, cd, st, ct := securetest.Configs(t)
	for _, tc := range []struct {
		name           string
		so, co         transport.Options
		proto          string // capture filter protocol
		decodeAs, data string // tshark -d rule for the port, and the application data field
		clear          []string
	}{
		{"sctp-native+dtls", transport.Options{LLP: transport.SCTPNative, Native: transport.SCTPOptions{DTLS: sd}}, transport.Options{LLP: transport.SCTPNative, Native: transport.SCTPOptions{DTLS: cd}},
			"udp", "udp.port==%d,dtls", "dtls.app_data", []string{"sctp", "rdmap", "ddp"}},
		{"mpa+tls", transport.Options{LLP: transport.MPA, MPA: transport.MPAOptions{TLS: st}}, transport.Options{LLP: transport.MPA, MPA: transport.MPAOptions{TLS: ct}},
			"tcp", "tcp.port==%d,tls", "tls.app_data", []string{"iwarp_mpa", "iwarp_ddp", "iwarp_rdma"}},
		{"sctp-native in the clear", transport.Options{LLP: transport.SCTPNative}, transport.Options{LLP: transport.SCTPNative},
			"udp", "udp.port==%d,sctp", "rdmap", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := transport.Listen(tc.so, "127.0.0.1:0")
			require.NoError(t, err)
			_, port, _ := net.SplitHostPort(ln.Addr())
			srv := bench.NewServer(bench.ServerConfig{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Run(ctx, ln) }()
			capt := startCapture(t, tc.proto+" port "+port)
			for _, test := range bench.Tests {
				rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err := bench.Run(rctx, bench.Config{Transport: tc.co, Addr: ln.Addr(), Test: test, Size: 2048, Iters: 20, Depth: 4})
				rcancel()
				require.NoError(t, err, "%v", test)
			}
			cancel()
			require.NoError(t, <-done)
			pcap := capt.stop(t)
			var p int
			_, _ = fmt.Sscan(port, &p)
			rule := fmt.Sprintf(tc.decodeAs, p)
			app := frames(t, pcap, rule, tc.data)
			t.Logf("%s: %d frames of %s", tc.name, app, tc.data)
			assert.Positive(t, app, "the run's messages are on the wire as %s", tc.data)
			for _, proto := range tc.clear {
				assert.Zero(t, frames(t, pcap, rule, proto), "no %s in the clear", proto)
			}
		})
	}
}
