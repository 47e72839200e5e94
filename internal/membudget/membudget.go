// Package membudget charges the memory that peers make this process hold
// (reassembly, receive windows, re-sequencing) against one process-wide
// budget, and against a share per association: a peer that exceeds its
// share loses its association, never another association's memory.
//
// Charges are in octets actually held: the capacity of the buffer (its size
// class), plus the bookkeeping per entry, never the user data alone.
package membudget

import (
	"errors"
	"sync"
	"sync/atomic"
)

// DefaultLimit is the process-wide budget unless SetLimit says otherwise.
const DefaultLimit = 512 << 20

// ErrExhausted is returned when a charge does not fit: errors.Is target of
// the errors of the packages that charge.
var ErrExhausted = errors.New("membudget: memory budget exhausted")

// Budget is a byte budget shared by many Accounts. It is safe for
// concurrent use.
type Budget struct {
	limit   atomic.Int64
	used    atomic.Int64
	peak    atomic.Int64
	refused atomic.Uint64

	// The accounts that can be reclaimed (SetReclaim), the one being
	// reclaimed now (at most one at a time) and the count of reclaims.
	mu       sync.Mutex
	owners   map[*Account]struct{}
	victim   atomic.Pointer[Account]
	reclaims atomic.Uint64
	// grace is what ChargeOrReclaim may charge beyond the limit while the
	// account draining (reclaimed, not yet closed) gives back what it
	// holds: at most that much, so the overdraft is memory on its way out.
	grace    atomic.Int64
	draining atomic.Pointer[Account]
}

// New returns a Budget of limit octets (limit <= 0: DefaultLimit).
func New(limit int64) *Budget {
	b := &Budget{}
	b.SetLimit(limit)
	return b
}

// Process is the budget every association of the process is charged
// against unless its configuration names another.
var Process = New(DefaultLimit)

// SetLimit changes the limit (<= 0: DefaultLimit). Octets already held stay
// charged.
func (b *Budget) SetLimit(limit int64) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	b.limit.Store(limit)
}

// Limit is the budget in octets.
func (b *Budget) Limit() int64 { return b.limit.Load() }

// Used is the octets charged now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Peak is the most octets ever charged at once.
func (b *Budget) Peak() int64 { return b.peak.Load() }

// Refused counts the charges that did not fit.
func (b *Budget) Refused() uint64 { return b.refused.Load() }

// Reclaimable is the number of accounts the budget could reclaim now
// (SetReclaim, not yet closed).
func (b *Budget) Reclaimable() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.owners)
}

// Reclaims counts the accounts whose owner was asked to give up all it
// holds (SetReclaim) so that a smaller one could be charged.
func (b *Budget) Reclaims() uint64 { return b.reclaims.Load() }

// reclaimFor is called when req could not be charged n octets for lack of
// room in b; it reports whether req holds less than its fair part of b
// (the limit over the accounts that can be reclaimed). If so, the account
// holding the most, if that is more than req would hold, is reclaimed: its
// owner's reclaim function runs on a goroutine of its own, one at a time.
// An account over its fair part is only refused (its owner drops what it
// was given, RFC 9260 §6.2, or ends).
func (b *Budget) reclaimFor(req *Account, n int64) (fair bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := int64(len(b.owners))
	if k == 0 || req.held.Load() > b.limit.Load()/k {
		return false
	}
	if b.victim.Load() != nil {
		return true
	}
	var v *Account
	var most int64
	for o := range b.owners {
		if h := o.held.Load(); h > most {
			v, most = o, h
		}
	}
	if v == nil || v == req || most <= req.held.Load() || !b.victim.CompareAndSwap(nil, v) {
		return true
	}
	delete(b.owners, v)
	b.draining.Store(v)
	b.grace.Store(most)
	b.reclaims.Add(1)
	go func() {
		defer b.victim.Store(nil)
		v.reclaim()
	}()
	return true
}

// drawGrace charges n octets beyond the limit out of what the draining
// account is giving back, if that much is left.
func (b *Budget) drawGrace(n int64) bool {
	for {
		g := b.grace.Load()
		if g < n || b.draining.Load() == nil {
			return false
		}
		if b.grace.CompareAndSwap(g, g-n) {
			break
		}
	}
	u := b.used.Add(n)
	for {
		p := b.peak.Load()
		if u <= p || b.peak.CompareAndSwap(p, u) {
			return true
		}
	}
}

func (b *Budget) reserve(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit.Load() {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			for {
				p := b.peak.Load()
				if u+n <= p || b.peak.CompareAndSwap(p, u+n) {
					return true
				}
			}
		}
	}
}

func (b *Budget) release(n int64) {
	if b.used.Add(-n) < 0 {
		panic("membudget: released more than was charged")
	}
}

// Account is one owner's share of a Budget (one association, one session
// table). The zero Account is not usable; use NewAccount. Safe for
// concurrent use: charges come from the receive path, releases from the
// reader that takes delivered data.
type Account struct {
	b       *Budget
	limit   int64
	held    atomic.Int64
	refused atomic.Uint64
	reclaim func() // SetReclaim
}

// NewAccount returns an account of at most limit octets in b (b nil:
// Process).
func NewAccount(b *Budget, limit int64) *Account {
	if b == nil {
		b = Process
	}
	return &Account{b: b, limit: limit}
}

// Charge takes n octets from the account and its budget, or nothing and
// ErrExhausted if either would be exceeded.
func (a *Account) Charge(n int) error { return a.charge(n, false) }

func (a *Account) charge(n int, overdraft bool) error {
	if n <= 0 {
		return nil
	}
	m := int64(n)
	for {
		h := a.held.Load()
		if h+m > a.limit {
			a.refused.Add(1)
			return ErrExhausted
		}
		if a.held.CompareAndSwap(h, h+m) {
			break
		}
	}
	if a.b.reserve(m) {
		return nil
	}
	if fair := a.b.reclaimFor(a, m); fair && overdraft && a.b.drawGrace(m) {
		return nil
	}
	a.held.Add(-m)
	a.refused.Add(1)
	a.b.refused.Add(1)
	return ErrExhausted
}

// ChargeOrReclaim is Charge for an owner that cannot drop what it was
// given (data the transport already acknowledged): when the budget is full
// and the account holds less than its fair part, the account holding the
// most is reclaimed and n is charged beyond the limit, out of what the
// reclaimed account is about to give back. Used can thus pass Limit by at
// most one reclaimed account's holding, until it closes.
func (a *Account) ChargeOrReclaim(n int) error { return a.charge(n, true) }

// SetReclaim makes the account one the budget can reclaim: when the
// budget is full and a smaller account is refused, fn of the account
// holding the most is called, once, on a goroutine of its own; fn must end
// what holds the account's memory (the association is aborted) so that
// Close gives it back. Called once, before the first charge.
func (a *Account) SetReclaim(fn func()) {
	a.reclaim = fn
	a.b.mu.Lock()
	if a.b.owners == nil {
		a.b.owners = make(map[*Account]struct{})
	}
	a.b.owners[a] = struct{}{}
	a.b.mu.Unlock()
}

// Fits says whether n more octets would be charged now (not a promise:
// another goroutine may charge in between).
func (a *Account) Fits(n int) bool {
	m := int64(n)
	return a.held.Load()+m <= a.limit && a.b.used.Load()+m <= a.b.limit.Load()
}

// Release gives back n octets charged before.
func (a *Account) Release(n int) {
	if n <= 0 {
		return
	}
	if a.held.Add(-int64(n)) < 0 {
		panic("membudget: account released more than was charged")
	}
	a.b.release(int64(n))
}

// Close releases everything still held (the association ended).
func (a *Account) Close() {
	if a.reclaim != nil {
		a.b.mu.Lock()
		delete(a.b.owners, a)
		if a.b.draining.Load() == a {
			a.b.draining.Store(nil)
			a.b.grace.Store(0)
		}
		a.b.mu.Unlock()
	}
	if h := a.held.Swap(0); h > 0 {
		a.b.release(h)
	}
}

// Held is the octets charged to the account now.
func (a *Account) Held() int64 { return a.held.Load() }

// Limit is the account's share in octets.
func (a *Account) Limit() int64 { return a.limit }

// Refused counts the charges refused to this account.
func (a *Account) Refused() uint64 { return a.refused.Load() }

// Budget is the budget the account draws on.
func (a *Account) Budget() *Budget { return a.b }
