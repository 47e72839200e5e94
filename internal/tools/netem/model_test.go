package netem

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Unix(1000, 0)

func TestProfileValidate(t *testing.T) {
	for _, p := range []Profile{
		{Loss: -0.1}, {Loss: 1.5}, {Duplicate: 2}, {Reorder: -1}, {ReorderCorr: 1.1},
		{Delay: -time.Millisecond}, {Delay: time.Millisecond, Jitter: 2 * time.Millisecond},
		{LossBurst: -1}, {Loss: 1, LossBurst: 3}, {Rate: -1}, {Queue: -1},
	} {
		err := p.Validate()
		assert.ErrorIs(t, err, ErrProfile, "%+v", p)
		_, err = NewModel(p, 1)
		assert.ErrorIs(t, err, ErrProfile)
	}
	assert.NoError(t, Profile{Delay: 50 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.01, LossBurst: 4, Rate: 100e6}.Validate())
}

func TestProfileString(t *testing.T) {
	p := Profile{Delay: 50 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.01, LossBurst: 4, Rate: 100e6}
	assert.Equal(t, "delay 50ms 5ms loss 1% (bursts of 4) rate 100Mbit queue 1250000B", p.String())
	assert.Equal(t, "none", Profile{}.String())
	assert.Equal(t, minQueue, Profile{Rate: 1e6}.QueueOctets(), "at least 64 KiB")
	assert.Equal(t, 5000, Profile{Rate: 1e9, Queue: 5000}.QueueOctets())
	assert.Equal(t, "64kbit", FormatRate(64000))
	assert.Equal(t, "1Gbit", FormatRate(1e9))
	assert.Equal(t, "1500bit", FormatRate(1500))
}

func TestModelDelayJitter(t *testing.T) {
	m, err := NewModel(Profile{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond}, 1)
	require.NoError(t, err)
	var lo, hi time.Duration = time.Hour, 0
	for i := range 10000 {
		at, v := m.Admit(t0, 100, nil)
		require.Equal(t, Delivered, v, i)
		require.Len(t, at, 1)
		d := at[0].Sub(t0)
		lo, hi = min(lo, d), max(hi, d)
	}
	assert.GreaterOrEqual(t, lo, 8*time.Millisecond)
	assert.LessOrEqual(t, hi, 12*time.Millisecond)
	assert.Less(t, lo, 8200*time.Microsecond, "the jitter's range is used")
	assert.Greater(t, hi, 11800*time.Microsecond)
}

func TestModelRandomLoss(t *testing.T) {
	m, err := NewModel(Profile{Loss: 0.01}, 7)
	require.NoError(t, err)
	const n = 200000
	for range n {
		m.Admit(t0, 100, nil)
	}
	c := m.Counters()
	assert.InDelta(t, 0.01, float64(c.Lost)/n, 0.001)
	assert.Equal(t, uint64(n), c.Packets)
	assert.Equal(t, c.Packets-c.Lost, c.Delivered)
}

// TestModelAdmitExempt: an exempt packet is never lost but still takes
// its turn at the bottleneck.
func TestModelAdmitExempt(t *testing.T) {
	m, err := NewModel(Profile{Loss: 1, Rate: 8000}, 7) // 1 octet per ms
	require.NoError(t, err)
	at, v := m.Admit(t0, 100, nil)
	assert.Equal(t, Lost, v)
	assert.Empty(t, at)
	at, v = m.AdmitExempt(t0, 100, nil)
	require.Equal(t, Delivered, v)
	assert.Equal(t, []time.Time{t0.Add(100 * time.Millisecond)}, at)
	at, v = m.AdmitExempt(t0, 10, nil)
	require.Equal(t, Delivered, v)
	assert.Equal(t, []time.Time{t0.Add(110 * time.Millisecond)}, at, "queued behind the first")
	c := m.Counters()
	assert.Equal(t, Counters{Packets: 3, Octets: 210, Lost: 1, Delivered: 2, Exempt: 2}, c)
}

// TestModelBurstLoss: the Gilbert model keeps the mean loss and makes runs
// of losses of the mean length asked for.
func TestModelBurstLoss(t *testing.T) {
	m, err := NewModel(Profile{Loss: 0.01, LossBurst: 5}, 11)
	require.NoError(t, err)
	const n = 1000000
	runs, cur := 0, 0
	for range n {
		_, v := m.Admit(t0, 100, nil)
		if v == Lost {
			cur++
			continue
		}
		if cur > 0 {
			runs++
			cur = 0
		}
	}
	c := m.Counters()
	assert.InDelta(t, 0.01, float64(c.Lost)/n, 0.002, "mean loss")
	assert.InDelta(t, 5, float64(c.Lost)/float64(runs), 0.5, "mean burst")
}

// TestModelRate: back-to-back packets leave the bottleneck one
// serialisation time apart, and a queue of octets beyond Queue is tail
// dropped; once drained, the queue takes packets again.
func TestModelRate(t *testing.T) {
	m, err := NewModel(Profile{Rate: 8e6, Queue: 10000}, 1) // 1 octet per µs
	require.NoError(t, err)
	var last time.Time
	for i := range 10 {
		at, v := m.Admit(t0, 1000, nil)
		require.Equal(t, Delivered, v, i)
		assert.Equal(t, t0.Add(time.Duration(i+1)*time.Millisecond), at[0], "packet %d leaves after %d serialisations", i, i+1)
		last = at[0]
	}
	_, v := m.Admit(t0, 1000, nil)
	assert.Equal(t, QueueFull, v, "10,000 octets queued: no room for more")
	assert.Equal(t, uint64(1), m.Counters().QueueDrops)
	at, v := m.Admit(last, 1000, nil)
	require.Equal(t, Delivered, v, "drained")
	assert.Equal(t, last.Add(time.Millisecond), at[0])
}

// TestModelRateThroughput: offered above its rate, the bottleneck passes
// its rate and drops the rest.
func TestModelRateThroughput(t *testing.T) {
	m, err := NewModel(Profile{Rate: 100e6, Delay: 10 * time.Millisecond}, 3)
	require.NoError(t, err)
	now, out := t0, 0
	var lastLeave time.Time
	for range 100000 { // 1500 octets every 60 µs: 200 Mbit/s offered
		at, v := m.Admit(now, 1500, nil)
		if v == Delivered {
			out += 1500
			lastLeave = at[0]
		}
		now = now.Add(60 * time.Microsecond)
	}
	elapsed := lastLeave.Sub(t0) - 10*time.Millisecond
	rate := float64(out) * 8 / elapsed.Seconds()
	assert.InDelta(t, 100e6, rate, 1e6)
	assert.InDelta(t, 0.5, float64(m.Counters().QueueDrops)/100000, 0.02)
}

func TestModelDuplicateAndReorder(t *testing.T) {
	m, err := NewModel(Profile{Delay: 5 * time.Millisecond, Duplicate: 0.1, Reorder: 0.25}, 5)
	require.NoError(t, err)
	const n = 100000
	copies, early := 0, 0
	for range n {
		at, v := m.Admit(t0, 100, nil)
		require.Equal(t, Delivered, v)
		copies += len(at)
		for _, a := range at {
			if a.Equal(t0) {
				early++
			}
		}
	}
	c := m.Counters()
	assert.InDelta(t, 0.1, float64(c.Duplicated)/n, 0.01)
	assert.Equal(t, uint64(copies), c.Delivered)
	assert.InDelta(t, 0.25, float64(early)/float64(copies), 0.01)
	assert.Equal(t, uint64(early), c.Early)
}

func TestModelNoAllocs(t *testing.T) {
	m, err := NewModel(Profile{Delay: time.Millisecond, Jitter: time.Millisecond / 2, Loss: 0.01, LossBurst: 3, Duplicate: 0.01, Reorder: 0.1, Rate: 1e9}, 1)
	require.NoError(t, err)
	at := make([]time.Time, 0, 2)
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		at, _ = m.Admit(now, 1500, at[:0])
	})
	assert.Zero(t, allocs)
}
