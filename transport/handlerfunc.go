package transport

import (
	"context"
	"net/netip"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// HandlerFuncs is a Handler of optional functions: a nil OnAdmit admits
// every stream, a nil OnPrepare posts nothing, a nil OnServe returns when
// ctx ends or the endpoint does, a nil OnDropped ignores the drop.
type HandlerFuncs struct {
	OnAdmit   func(peer netip.Addr, privateData []byte) error
	OnPrepare func(ep *rdmap.Endpoint) error
	OnServe   func(ctx context.Context, peer netip.Addr, ep *rdmap.Endpoint)
	OnDropped func(peer netip.Addr)
}

// Admit calls OnAdmit if set.
func (h *HandlerFuncs) Admit(peer netip.Addr, privateData []byte) error {
	if h.OnAdmit == nil {
		return nil
	}
	return h.OnAdmit(peer, privateData)
}

// Prepare calls OnPrepare if set.
func (h *HandlerFuncs) Prepare(ep *rdmap.Endpoint) error {
	if h.OnPrepare == nil {
		return nil
	}
	return h.OnPrepare(ep)
}

// Serve calls OnServe if set, or waits for ctx or the endpoint to end.
func (h *HandlerFuncs) Serve(ctx context.Context, peer netip.Addr, ep *rdmap.Endpoint) {
	if h.OnServe != nil {
		h.OnServe(ctx, peer, ep)
		return
	}
	select {
	case <-ctx.Done():
	case <-ep.Done():
	}
}

// Dropped calls OnDropped if set.
func (h *HandlerFuncs) Dropped(peer netip.Addr) {
	if h.OnDropped != nil {
		h.OnDropped(peer)
	}
}
