package reseq

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
)

// What holding one buffer costs beyond its capacity: the *[]byte header
// bufpool hands out.
const sliceHeaderCost = int(unsafe.Sizeof([]byte(nil)))

// HeldCost is the memory a pooled buffer of capacity c occupies: its size
// class (bufpool's classes are powers of two, which are Go size classes;
// above 32 KiB Go rounds to 8 KiB pages) plus its header.
func HeldCost(c int) int {
	if c > 32<<10 {
		c = (c + 8191) &^ 8191
	}
	return c + sliceHeaderCost
}

// BufCost is HeldCost of the buffer bufpool.Get(n) returns (its classes:
// 512 octets to 64 KiB).
func BufCost(n int) int {
	c := 512
	for c < n && c < 1<<16 {
		c <<= 1
	}
	if n > c {
		c = n // beyond bufpool's classes: allocated at its length
	}
	return HeldCost(c)
}

// Account charges what one association holds for its peer (early
// chunks, segments before Start, the re-sequencing rings) against the
// association's share of the process budget (a membudget.Account) and
// against its peer address's share. Once a charge does not fit, every
// later one fails too (the association is being aborted); after close,
// releases are no-ops.
type Account struct {
	Acct *membudget.Account
	Addr *AddrShare // nil: no per-address share
	mu   sync.Mutex
	held int64 // what this association holds, in both shares
	over bool
	done bool
}

// charge takes n octets, or returns an error wrapping ErrMemoryShare and
// membudget.ErrExhausted.
func (h *Account) Charge(n int) error {
	if h == nil || n <= 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.over || h.done {
		return fmt.Errorf("%w: the association is over its share", ErrMemoryShare)
	}
	if h.Addr != nil && !h.Addr.take(int64(n)) {
		h.over = true
		return fmt.Errorf("%w: its peer address holds %d octets, %d more do not fit in %d (Config.MaxHeldAddrBytes; %w)",
			ErrMemoryShare, h.Addr.held.Load(), n, h.Addr.limit, membudget.ErrExhausted)
	}
	if err := h.Acct.ChargeOrReclaim(n); err != nil {
		if h.Addr != nil {
			h.Addr.give(int64(n))
		}
		h.over = true
		b := h.Acct.Budget()
		return fmt.Errorf("%w: it holds %d octets, %d more do not fit in its share of %d (Config.MaxHeldAssocBytes) or the process budget (%d of %d used): %w",
			ErrMemoryShare, h.Acct.Held(), n, h.Acct.Limit(), b.Used(), b.Limit(), err)
	}
	h.held += int64(n)
	return nil
}

// release gives back n octets charged before.
func (h *Account) Release(n int) {
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
	h.Acct.Release(int(m))
	if h.Addr != nil {
		h.Addr.give(m)
	}
}

// close gives back everything still charged (the association ended; what
// its sessions still reference is garbage once they are dropped).
func (h *Account) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	if h.held > 0 {
		h.Acct.Release(int(h.held))
		if h.Addr != nil {
			h.Addr.give(h.held)
		}
		h.held = 0
	}
	if h.Addr != nil {
		h.Addr.drop()
	}
	h.Acct.Close() // and out of the budget's reclaimable accounts
}

// heldNow is the octets charged now.
func (h *Account) HeldNow() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

// AddrShare is what all the associations from one peer address hold
// together (Config.MaxHeldAddrBytes): the per-address association cap
// (sctp.Config.MaxAssociationsPerAddress, 64) times the per-association
// share would otherwise let one address take most of the process budget.
type AddrShare struct {
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
	addrShares   = map[addrKey]*AddrShare{}
)

// ShareOf returns the share of addr's IP address in b, counting one more
// association; nil when addr has no IP address.
func ShareOf(b *membudget.Budget, addr net.Addr, limit int64) *AddrShare {
	ip, ok := addrIP(addr)
	if !ok {
		return nil
	}
	k := addrKey{b, ip}
	addrSharesMu.Lock()
	defer addrSharesMu.Unlock()
	s := addrShares[k]
	if s == nil {
		s = &AddrShare{key: k, limit: limit}
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

func (s *AddrShare) take(n int64) bool {
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

func (s *AddrShare) give(n int64) { s.held.Add(-n) }

// drop counts one association less; the last one removes the share.
func (s *AddrShare) drop() {
	addrSharesMu.Lock()
	defer addrSharesMu.Unlock()
	s.refs--
	if s.refs == 0 && addrShares[s.key] == s {
		delete(addrShares, s.key)
	}
}
