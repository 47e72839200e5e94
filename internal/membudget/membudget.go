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

// reserve charges n octets if they fit.
func (b *Budget) reserve(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit.Load() {
			b.refused.Add(1)
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
func (a *Account) Charge(n int) error {
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
	if !a.b.reserve(m) {
		a.held.Add(-m)
		a.refused.Add(1)
		return ErrExhausted
	}
	return nil
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
