package membudget

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAccountShareAndBudget(t *testing.T) {
	b := New(1000)
	a1 := NewAccount(b, 600)
	a2 := NewAccount(b, 600)

	require.NoError(t, a1.Charge(600))
	assert.ErrorIs(t, a1.Charge(1), ErrExhausted, "an account cannot exceed its share")
	assert.Equal(t, uint64(1), a1.Refused())

	require.NoError(t, a2.Charge(400))
	assert.ErrorIs(t, a2.Charge(1), ErrExhausted, "nor the budget, even within its share")
	assert.Equal(t, int64(400), a2.Held(), "a refused charge holds nothing")
	assert.Equal(t, int64(1000), b.Used())
	assert.Equal(t, uint64(1), b.Refused())

	a1.Release(100)
	require.NoError(t, a2.Charge(100))
	assert.False(t, a2.Fits(1))

	a1.Close()
	a2.Close()
	assert.Zero(t, b.Used())
	assert.Equal(t, int64(1000), b.Peak())
}

func TestOverReleasePanics(t *testing.T) {
	a := NewAccount(New(10), 10)
	require.NoError(t, a.Charge(5))
	assert.Panics(t, func() { a.Release(6) })
}

func TestDefaults(t *testing.T) {
	assert.Equal(t, int64(DefaultLimit), New(0).Limit())
	assert.Same(t, Process, NewAccount(nil, 1).Budget())
	assert.NoError(t, NewAccount(New(1), 1).Charge(0))
}

func TestConcurrentChargesNeverExceed(t *testing.T) {
	b := New(10_000)
	var wg sync.WaitGroup
	for range 8 {
		a := NewAccount(b, 5_000)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10_000 {
				if a.Charge(7) == nil {
					assert.LessOrEqual(t, b.Used(), b.Limit())
					a.Release(7)
				}
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, b.Used())
	assert.LessOrEqual(t, b.Peak(), int64(10_000))
}

// TestReclaimTheBiggestForASmallOne: with the budget full, a refused
// account under its fair part has the biggest account reclaimed (once,
// one at a time); an account over its fair part is only refused.
func TestReclaimTheBiggestForASmallOne(t *testing.T) {
	b := New(1000)
	reclaimed := make(chan *Account, 4)
	acct := func() *Account {
		a := NewAccount(b, 1000)
		a.SetReclaim(func() { reclaimed <- a; a.Close() })
		return a
	}
	big, mid, small := acct(), acct(), acct()
	require.NoError(t, big.Charge(660))
	require.NoError(t, mid.Charge(340))

	assert.ErrorIs(t, mid.Charge(10), ErrExhausted, "over its fair part (333): refused only")
	assert.Zero(t, b.Reclaims())

	assert.ErrorIs(t, small.Charge(10), ErrExhausted)
	assert.Same(t, big, <-reclaimed, "the biggest is reclaimed")
	assert.Equal(t, uint64(1), b.Reclaims())
	require.Eventually(t, func() bool { return b.victim.Load() == nil }, time.Second, time.Millisecond)
	require.NoError(t, small.Charge(10), "its memory given back")
	assert.Equal(t, int64(350), b.Used())

	require.NoError(t, small.Charge(650))
	assert.ErrorIs(t, small.Charge(10), ErrExhausted, "the biggest now: nothing to reclaim for it")
	assert.Equal(t, uint64(1), b.Reclaims())
	mid.Close()
	small.Close()
	assert.Zero(t, b.Used())
	assert.Empty(t, b.owners)
}

// TestChargeOrReclaimOverdraftsOnlyWhatDrains: an owner that cannot drop
// what it was given (ChargeOrReclaim) and holds less than its fair part is
// charged at once when the budget is full, beyond the limit by at most what
// the reclaimed account holds; an account over its fair part is refused,
// and the overdraft ends when the reclaimed account closes.
func TestChargeOrReclaimOverdraftsOnlyWhatDrains(t *testing.T) {
	b := New(1000)
	reclaimed := make(chan *Account, 4)
	acct := func() *Account {
		a := NewAccount(b, 1000)
		a.SetReclaim(func() { reclaimed <- a })
		return a
	}
	big, mid, small := acct(), acct(), acct()
	require.NoError(t, big.Charge(660))
	require.NoError(t, mid.Charge(340))

	assert.ErrorIs(t, mid.ChargeOrReclaim(10), ErrExhausted, "over its fair part (333): refused only")
	require.NoError(t, small.ChargeOrReclaim(300), "within its fair part: charged beyond the limit")
	assert.Same(t, big, <-reclaimed, "the biggest is reclaimed")
	assert.Equal(t, int64(1300), b.Used())
	assert.Equal(t, int64(1300), b.Peak())
	require.Eventually(t, func() bool { return b.victim.Load() == nil }, time.Second, time.Millisecond)
	assert.ErrorIs(t, small.ChargeOrReclaim(250), ErrExhausted, "over its fair part now (500 of 2 owners)")
	require.NoError(t, small.ChargeOrReclaim(150), "fair: out of the 360 still draining")
	assert.Equal(t, int64(1450), b.Used())
	assert.ErrorIs(t, small.ChargeOrReclaim(51), ErrExhausted, "501 of a fair 500")
	assert.Equal(t, uint64(1), b.Reclaims())

	big.Close()
	assert.Equal(t, int64(790), b.Used(), "the reclaimed account's octets given back")
	assert.Equal(t, int64(1450), b.Peak(), "the overdraft never passed what was draining")
	assert.Zero(t, b.grace.Load(), "no overdraft once nothing drains")
	assert.Nil(t, b.draining.Load())
	mid.Close()
	small.Close()
	assert.Zero(t, b.Used())
}
