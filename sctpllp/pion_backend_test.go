package sctpllp

import (
	"context"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
	"github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// pionLoopbackMTU is the path MTU the pion backend assumes towards a
// loopback peer: its largest packet plus the UDP and IPv4 headers.
const pionLoopbackMTU = dplpmtud.PionMaxPacket + pmtu.UDPHeaderLen + pmtu.IPv4HeaderLen

// pionTransport is what these tests read of a pion transport beyond
// backend.Transport.
type pionTransport interface {
	backend.Transport
	PathMTU() (dplpmtud.Stats, bool)
	PMTUConn() *dplpmtud.Conn
	StreamFree(sid uint16) bool
	Buffered() int
	SocketBuffers() (rcv, snd int)
}

// pionListener is what these tests read of a pion listener beyond
// backend.Listener.
type pionListener interface {
	backend.Listener
	Peers() int
	HandshakeStats() sctp.HandshakeStats
}

// pionPMTU is pion's stack at its defaults with path MTU tracking by pcfg.
func pionPMTU(pcfg dplpmtud.ConnConfig) backend.Stack {
	return pion.Stack(pion.Config{PathMTU: &pcfg})
}

// dialPionPMTU dials addr with pionPMTU.
func dialPionPMTU(ctx context.Context, addr string, pcfg dplpmtud.ConnConfig) (pionTransport, error) {
	t, err := pionPMTU(pcfg).Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return t.(pionTransport), nil
}
