package mpa

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/pcapread"
)

// siwPcap is a capture of a real Linux siw rping exchange (a copy of the
// project's spec/captures/rping-siw.pcap): server port 7174, CRC not
// negotiated, no Markers, enhanced MPA revision 2.
const siwPcap = "testdata/rping-siw.pcap"

// tcpStreams returns the TCP payload of each direction of a capture,
// keyed by source port (one connection per capture), reassembled by
// package capture.
func tcpStreams(t *testing.T, path string) map[uint16][]byte {
	t.Helper()
	streams, err := pcapread.ReadTCPStreams(path)
	require.NoError(t, err)
	out := map[uint16][]byte{}
	for fl, b := range streams {
		out[fl.Src.Port()] = b
	}
	return out
}
