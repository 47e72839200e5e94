package sctpllp

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// What holding one buffer costs beyond its capacity: the *[]byte header
// bufpool hands out.
const sliceHeaderCost = int(unsafe.Sizeof([]byte(nil)))

// heldCost is the memory a pooled buffer of capacity c occupies: its size
// class (bufpool's classes are powers of two, which are Go size classes;
// above 32 KiB Go rounds to 8 KiB pages) plus its header.
func heldCost(c int) int {
	if c > 32<<10 {
		c = (c + 8191) &^ 8191
	}
	return c + sliceHeaderCost
}

// bufCost is heldCost of the buffer bufpool.Get(n) returns (its classes:
// 512 octets to 64 KiB).
func bufCost(n int) int {
	c := 512
	for c < n && c < 1<<16 {
		c <<= 1
	}
	if n > c {
		c = n // beyond bufpool's classes: allocated at its length
	}
	return heldCost(c)
}

// heldAccount charges what one association holds for its peer (early
// chunks, segments before Start, the re-sequencing rings) against the
// association's share of the process budget (a membudget.Account) and
// against its peer address's share. Once a charge does not fit, every
// later one fails too (the association is being aborted); after close,
// releases are no-ops.
type heldAccount struct {
	acct *membudget.Account
	addr *addrShare // nil: no per-address share
	mu   sync.Mutex
	held int64 // what this association holds, in both shares
	over bool
	done bool
}

// charge takes n octets, or returns an error wrapping errMemoryShare and
// membudget.ErrExhausted.
func (h *heldAccount) charge(n int) error {
	if h == nil || n <= 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.over || h.done {
		return fmt.Errorf("%w: the association is over its share", errMemoryShare)
	}
	if h.addr != nil && !h.addr.take(int64(n)) {
		h.over = true
		return fmt.Errorf("%w: its peer address holds %d octets, %d more do not fit in %d (Config.MaxHeldAddrBytes; %w)",
			errMemoryShare, h.addr.held.Load(), n, h.addr.limit, membudget.ErrExhausted)
	}
	if err := h.acct.Charge(n); err != nil {
		if h.addr != nil {
			h.addr.give(int64(n))
		}
		h.over = true
		b := h.acct.Budget()
		return fmt.Errorf("%w: it holds %d octets, %d more do not fit in its share of %d (Config.MaxHeldAssocBytes) or the process budget (%d of %d used): %w",
			errMemoryShare, h.acct.Held(), n, h.acct.Limit(), b.Used(), b.Limit(), err)
	}
	h.held += int64(n)
	return nil
}

// release gives back n octets charged before.
func (h *heldAccount) release(n int) {
	if h == nil || n <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	m := min(int64(n), h.held)
	h.held -= m
	h.acct.Release(int(m))
	if h.addr != nil {
		h.addr.give(m)
	}
}

// close gives back everything still charged (the association ended; what
// its sessions still reference is garbage once they are dropped).
func (h *heldAccount) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	if h.held > 0 {
		h.acct.Release(int(h.held))
		if h.addr != nil {
			h.addr.give(h.held)
		}
		h.held = 0
	}
	if h.addr != nil {
		h.addr.drop()
	}
}

// heldNow is the octets charged now.
func (h *heldAccount) heldNow() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

// addrShare is what all the associations from one peer address hold
// together (Config.MaxHeldAddrBytes): the per-address association cap
// (sctp.Config.MaxAssociationsPerAddress, 64) times the per-association
// share would otherwise let one address take most of the process budget.
type addrShare struct {
	key   addrKey
	limit int64
	held  atomic.Int64
	refs  int // guarded by addrSharesMu
}

type addrKey struct {
	b  *membudget.Budget
	ip netip.Addr
}

var (
	addrSharesMu sync.Mutex
	addrShares   = map[addrKey]*addrShare{}
)

// shareOf returns the share of addr's IP address in b, counting one more
// association; nil when addr has no IP address.
func shareOf(b *membudget.Budget, addr net.Addr, limit int64) *addrShare {
	ip, ok := addrIP(addr)
	if !ok {
		return nil
	}
	k := addrKey{b, ip}
	addrSharesMu.Lock()
	defer addrSharesMu.Unlock()
	s := addrShares[k]
	if s == nil {
		s = &addrShare{key: k, limit: limit}
		addrShares[k] = s
	}
	s.refs++
	return s
}

// addrIP is the IP address of a transport address.
func addrIP(addr net.Addr) (netip.Addr, bool) {
	switch a := addr.(type) {
	case nil:
		return netip.Addr{}, false
	case *net.UDPAddr:
		if a == nil {
			return netip.Addr{}, false
		}
		ip, ok := netip.AddrFromSlice(a.IP)
		return ip.Unmap(), ok
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

func (s *addrShare) take(n int64) bool {
	for {
		h := s.held.Load()
		if h+n > s.limit {
			return false
		}
		if s.held.CompareAndSwap(h, h+n) {
			return true
		}
	}
}

func (s *addrShare) give(n int64) { s.held.Add(-n) }

// drop counts one association less; the last one removes the share.
func (s *addrShare) drop() {
	addrSharesMu.Lock()
	defer addrSharesMu.Unlock()
	s.refs--
	if s.refs == 0 && addrShares[s.key] == s {
		delete(addrShares, s.key)
	}
}

// overShare aborts the association whose charge did not fit its share
// (err wraps errMemoryShare): counted, and the cause of Err and of every
// session's end. Called from the receive path: the ABORT is sent from
// another goroutine.
func (a *Association) overShare(err error) {
	a.mu.Lock()
	first := a.shareErr == nil
	if first {
		a.shareErr = fmt.Errorf("%w: %w", llp.ErrAborted, err)
	}
	a.mu.Unlock()
	if first {
		a.ctr.shareAborts.Add(1)
		shareAborts.Add(1)
		go a.stop(true)
	}
}

// shareAborts counts the associations of the process aborted for their
// memory share.
var shareAborts atomic.Uint64

// ShareAborts is the number of associations this process aborted because
// what they made it hold did not fit their share (errMemoryShare).
func processShareAborts() uint64 { return shareAborts.Load() }
