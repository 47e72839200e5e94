package nstest

import (
	"context"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// pionTransport is what these tests read of a pion transport beyond
// backend.Transport: its path MTU tracker (pion.Config.PathMTU).
type pionTransport interface {
	backend.Transport
	PathMTU() (dplpmtud.Stats, bool)
	PMTUConn() *dplpmtud.Conn
}

// nativeTransport is what these tests read of a native transport beyond
// backend.Transport: the stack's counters and PLPMTUD state.
type nativeTransport interface {
	backend.Transport
	backend.MoreWriter
	Stats() sctp.Stats
	PLPMTUD() sctp.PLPMTUDStats
}

// dialPionPMTU dials addr with pion and path MTU tracking configured by pcfg.
func dialPionPMTU(ctx context.Context, addr string, pcfg dplpmtud.ConnConfig) (pionTransport, error) {
	t, err := pion.Stack(pion.Config{PathMTU: &pcfg}).Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return t.(pionTransport), nil
}

// dialNative dials addr with the native stack at its defaults.
func dialNative(ctx context.Context, addr string) (nativeTransport, error) {
	t, err := native.Stack(native.Config{}, nil).Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return t.(nativeTransport), nil
}
