package netem

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Profile is the impairment of one direction of a path (a Link applies it
// to both).
type Profile struct {
	// Delay is the one-way delay; Jitter spreads it uniformly over
	// Delay ± Jitter (packets may overtake one another, as in netem).
	Delay, Jitter time.Duration
	// Loss is the mean fraction of packets lost. LossBurst is the mean
	// length, in packets, of a run of losses: at most 1 means independent
	// losses; above, the Gilbert model with a bad state that loses every
	// packet and leaves with probability 1/LossBurst.
	Loss, LossBurst float64
	// Duplicate is the fraction of packets delivered twice.
	Duplicate float64
	// Reorder is the fraction of packets sent without the delay (ahead of
	// the delayed ones), with correlation ReorderCorr to the previous
	// packet's draw (netem's "reorder P CORR").
	Reorder, ReorderCorr float64
	// Rate is the bottleneck's rate in bits per second (0: none). Queue
	// is the octets its queue holds, tail drop beyond (0: one
	// bandwidth-delay product of Rate and a round trip of 2·Delay, at
	// least 64 KiB).
	Rate  int64
	Queue int
}

// minQueue is the smallest default bottleneck queue.
const minQueue = 64 << 10

// ErrProfile reports a profile whose values are out of range.
var ErrProfile = errors.New("netem: invalid profile")

// Validate reports a value out of range.
func (p Profile) Validate() error {
	frac := func(name string, v float64) error {
		if v < 0 || v > 1 {
			return fmt.Errorf("%w: %s %g is not a fraction in [0, 1]", ErrProfile, name, v)
		}
		return nil
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"loss", p.Loss}, {"duplicate", p.Duplicate}, {"reorder", p.Reorder}, {"reorder correlation", p.ReorderCorr}} {
		if err := frac(f.name, f.v); err != nil {
			return err
		}
	}
	switch {
	case p.Delay < 0 || p.Jitter < 0:
		return fmt.Errorf("%w: negative delay or jitter", ErrProfile)
	case p.Jitter > p.Delay:
		return fmt.Errorf("%w: jitter %v above the delay %v", ErrProfile, p.Jitter, p.Delay)
	case p.LossBurst < 0:
		return fmt.Errorf("%w: negative loss burst", ErrProfile)
	case p.LossBurst > 1 && p.Loss >= 1:
		return fmt.Errorf("%w: bursty loss needs a loss below 1", ErrProfile)
	case p.Rate < 0 || p.Queue < 0:
		return fmt.Errorf("%w: negative rate or queue", ErrProfile)
	}
	return nil
}

// QueueOctets is the bottleneck queue in effect: Queue, or its default.
func (p Profile) QueueOctets() int {
	if p.Queue > 0 || p.Rate == 0 {
		return p.Queue
	}
	bdp := int(float64(p.Rate) / 8 * (2 * p.Delay).Seconds())
	return max(bdp, minQueue)
}

// String describes the profile in netem's words, e.g. "delay 50ms 5ms
// loss 1% (bursts of 4) rate 100Mbit queue 1250000B".
func (p Profile) String() string {
	var a []string
	if p.Delay > 0 {
		s := "delay " + p.Delay.String()
		if p.Jitter > 0 {
			s += " " + p.Jitter.String()
		}
		a = append(a, s)
	}
	if p.Loss > 0 {
		s := fmt.Sprintf("loss %g%%", p.Loss*100)
		if p.LossBurst > 1 {
			s += fmt.Sprintf(" (bursts of %g)", p.LossBurst)
		}
		a = append(a, s)
	}
	if p.Duplicate > 0 {
		a = append(a, fmt.Sprintf("duplicate %g%%", p.Duplicate*100))
	}
	if p.Reorder > 0 {
		a = append(a, fmt.Sprintf("reorder %g%% %g%%", p.Reorder*100, p.ReorderCorr*100))
	}
	if p.Rate > 0 {
		a = append(a, "rate "+FormatRate(p.Rate), fmt.Sprintf("queue %dB", p.QueueOctets()))
	}
	if len(a) == 0 {
		return "none"
	}
	return strings.Join(a, " ")
}

// FormatRate writes bits per second as tc does: 100Mbit, 1Gbit, 64kbit.
func FormatRate(bps int64) string {
	switch {
	case bps >= 1e9 && bps%1e9 == 0:
		return fmt.Sprintf("%dGbit", bps/1e9)
	case bps >= 1e6 && bps%1e6 == 0:
		return fmt.Sprintf("%dMbit", bps/1e6)
	case bps >= 1e3 && bps%1e3 == 0:
		return fmt.Sprintf("%dkbit", bps/1e3)
	}
	return fmt.Sprintf("%dbit", bps)
}

// gilbert returns the Gilbert model's transition probabilities for the
// profile's mean loss and burst length: good→bad p and bad→good r, with
// the stationary loss p/(p+r) = Loss and the mean burst 1/r = LossBurst.
func (p Profile) gilbert() (pp, r float64) {
	r = 1 / p.LossBurst
	return p.Loss * r / (1 - p.Loss), r
}
