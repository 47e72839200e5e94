package netem

import (
	"math/rand/v2"
	"time"
)

// Verdict is what a Model decided for one packet.
type Verdict uint8

// Verdicts of Model.Admit.
const (
	// Delivered: the packet leaves at the times returned.
	Delivered Verdict = iota
	// Lost: the loss model dropped it.
	Lost
	// QueueFull: the bottleneck's queue had no room for it (tail drop).
	QueueFull
)

// Counters are what one direction did to the packets offered to it.
type Counters struct {
	// Packets and Octets offered; Lost and QueueDrops dropped by the loss
	// model and by the full bottleneck queue; Duplicated delivered twice;
	// Early sent ahead of the delay (reordered); Delivered copies handed
	// on; Exempt offered but spared the loss model (AdmitExempt).
	Packets, Octets, Lost, QueueDrops, Duplicated, Early, Delivered, Exempt uint64
}

// Model decides the fate of each packet of one direction. It is not safe
// for concurrent use.
type Model struct {
	p         Profile
	queue     int
	rng       *rand.Rand
	bad       bool      // Gilbert model state
	lastU     float64   // netem's correlated reorder draw
	busyUntil time.Time // the bottleneck finishes what it holds
	c         Counters
}

// NewModel returns a model of profile p (validated) drawing from a PCG
// seeded with seed.
func NewModel(p Profile, seed uint64) (*Model, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Model{p: p, queue: p.QueueOctets(), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}, nil
}

// Counters returns the counters so far.
func (m *Model) Counters() Counters { return m.c }

// Profile returns the model's profile.
func (m *Model) Profile() Profile { return m.p }

// lost draws the loss model.
func (m *Model) lost() bool {
	if m.p.Loss <= 0 {
		return false
	}
	if m.p.LossBurst <= 1 {
		return m.rng.Float64() < m.p.Loss
	}
	pp, r := m.p.gilbert()
	if m.bad {
		if m.rng.Float64() < r {
			m.bad = false
		}
	} else if m.rng.Float64() < pp {
		m.bad = true
	}
	return m.bad
}

// Admit decides the fate of a packet of size octets offered at now and
// appends the times at which its copies leave the link to at (none if it
// is dropped; two if duplicated).
func (m *Model) Admit(now time.Time, size int, at []time.Time) ([]time.Time, Verdict) {
	return m.admit(now, size, false, at)
}

// AdmitExempt is Admit for a packet that the loss model spares (it
// still takes its place in the bottleneck, its delay, duplication and
// reordering): a link whose loss hits only some of the packets.
func (m *Model) AdmitExempt(now time.Time, size int, at []time.Time) ([]time.Time, Verdict) {
	m.c.Exempt++
	return m.admit(now, size, true, at)
}

func (m *Model) admit(now time.Time, size int, exempt bool, at []time.Time) ([]time.Time, Verdict) {
	m.c.Packets++
	m.c.Octets += uint64(size)
	if !exempt && m.lost() {
		m.c.Lost++
		return at, Lost
	}
	leave := now
	if m.p.Rate > 0 {
		start := now
		if m.busyUntil.After(now) {
			held := float64(m.busyUntil.Sub(now).Seconds()) * float64(m.p.Rate) / 8
			if int(held)+size > m.queue {
				m.c.QueueDrops++
				return at, QueueFull
			}
			start = m.busyUntil
		}
		m.busyUntil = start.Add(time.Duration(float64(size) * 8 / float64(m.p.Rate) * float64(time.Second)))
		leave = m.busyUntil
	}
	copies := 1
	if m.p.Duplicate > 0 && m.rng.Float64() < m.p.Duplicate {
		copies = 2
		m.c.Duplicated++
	}
	for range copies {
		d := m.p.Delay
		if m.p.Jitter > 0 {
			d += time.Duration((m.rng.Float64()*2 - 1) * float64(m.p.Jitter))
		}
		if m.p.Reorder > 0 {
			m.lastU = m.p.ReorderCorr*m.lastU + (1-m.p.ReorderCorr)*m.rng.Float64()
			if m.lastU < m.p.Reorder {
				d = 0
				m.c.Early++
			}
		}
		at = append(at, leave.Add(max(d, 0)))
		m.c.Delivered++
	}
	return at, Delivered
}
