package sctp

import (
	"math/bits"
	"time"
)

// timerID names one of the timers of an association.
type timerID uint8

// The timers of one association. Each is a single deadline; a timer
// that RFC 9260 keeps per destination address (T3-rtx, heartbeat) is one
// deadline here, the earliest of the paths' on a multihomed association
// (multihome.t3, the path manager's HEARTBEAT schedule).
const (
	// timerT1Init guards an INIT until the INIT ACK arrives
	// (RFC 9260 §5.1 step A, §5.1.6).
	timerT1Init timerID = iota
	// timerT1Cookie guards a COOKIE ECHO until the COOKIE ACK arrives
	// (RFC 9260 §5.1 step C, §5.1.6).
	timerT1Cookie
	// timerT2Shutdown guards SHUTDOWN and SHUTDOWN ACK (RFC 9260 §9.2).
	timerT2Shutdown
	// timerT3Rtx is the retransmission timer of DATA (RFC 9260 §6.3.2).
	timerT3Rtx
	// timerT5ShutdownGuard bounds the whole shutdown (RFC 9260 §9.2).
	timerT5ShutdownGuard
	// timerHeartbeat paces HEARTBEATs to an idle destination
	// (RFC 9260 §8.3).
	timerHeartbeat
	// timerDelayedAck bounds the delay of a SACK (RFC 9260 §6.2).
	timerDelayedAck
	// timerReconfig guards an outstanding RE-CONFIG request
	// (RFC 6525 §5.1.1).
	timerReconfig
	// timerPLPMTUD paces RFC 8899 probes: PROBE_TIMER, CONFIRMATION_TIMER
	// and PMTU_RAISE_TIMER of pmtu.Prober, whichever is next.
	timerPLPMTUD

	numTimers
)

var timerNames = [numTimers]string{
	"T1-init", "T1-cookie", "T2-shutdown", "T3-rtx", "T5-shutdown-guard",
	"heartbeat", "delayed-ack", "reconfig", "plpmtud",
}

// String returns the RFC name of the timer.
func (id timerID) String() string {
	if id < numTimers {
		return timerNames[id]
	}
	return "timer?"
}

// timerSet is a set of TimerIDs.
type timerSet uint16

// Has reports whether id is in the set.
func (s timerSet) Has(id timerID) bool { return id < numTimers && s&(1<<id) != 0 }

// Empty reports whether the set is empty.
func (s timerSet) Empty() bool { return s == 0 }

// Len returns the number of timers in the set.
func (s timerSet) Len() int { return bits.OnesCount16(uint16(s)) }

// Pop returns the lowest timerID of the set and the set without it; ok is
// false for an empty set. It lets a loop handle expired timers without
// allocating:
//
//	for id, rest, ok := set.Pop(); ok; id, rest, ok = rest.Pop() { ... }
func (s timerSet) Pop() (id timerID, rest timerSet, ok bool) {
	if s == 0 {
		return 0, 0, false
	}
	id = timerID(bits.TrailingZeros16(uint16(s)))
	return id, s &^ (1 << id), true
}

// timers holds the deadlines of one association's timers so that its
// single event loop can compute its next wake-up (Next) and find what
// expired (Expired) instead of running one OS timer per timer, let alone
// per packet. Deadlines are time.Time values read from the monotonic
// clock (time.Now), so wall-clock steps do not disturb them.
//
// The zero value has every timer stopped. Timers is not safe for
// concurrent use: it belongs to the association's loop. No method
// allocates.
type timers struct {
	at      [numTimers]time.Time
	running timerSet
}

// Set starts timer id, or restarts it, to expire at the deadline at.
// Unknown ids are ignored.
func (t *timers) Set(id timerID, at time.Time) {
	if id >= numTimers {
		return
	}
	t.at[id] = at
	t.running |= 1 << id
}

// SetAfter starts or restarts timer id to expire d after now.
func (t *timers) SetAfter(id timerID, now time.Time, d time.Duration) {
	t.Set(id, now.Add(d))
}

// Stop stops timer id; stopping a stopped timer does nothing.
func (t *timers) Stop(id timerID) {
	if id >= numTimers {
		return
	}
	t.running &^= 1 << id
	t.at[id] = time.Time{}
}

// StopAll stops every timer (for example when the association closes).
func (t *timers) StopAll() { *t = timers{} }

// Running reports whether timer id is running.
func (t *timers) Running(id timerID) bool { return t.running.Has(id) }

// RunningSet returns the set of running timers.
func (t *timers) RunningSet() timerSet { return t.running }

// Deadline returns the deadline of timer id and whether it is running.
func (t *timers) Deadline(id timerID) (time.Time, bool) {
	if !t.running.Has(id) {
		return time.Time{}, false
	}
	return t.at[id], true
}

// Next returns the earliest deadline of the running timers, which timer
// it is (the lowest id among equal deadlines), and ok=false if none runs.
func (t *timers) Next() (at time.Time, id timerID, ok bool) {
	for i, rest, more := t.running.Pop(); more; i, rest, more = rest.Pop() {
		if !ok || t.at[i].Before(at) {
			at, id, ok = t.at[i], i, true
		}
	}
	return at, id, ok
}

// Expired stops every running timer whose deadline is at or before now
// and returns them. Timers are one-shot: a handler that wants its timer
// again (T3-rtx with data still outstanding, the heartbeat) sets it anew.
func (t *timers) Expired(now time.Time) timerSet {
	var out timerSet
	for i, rest, more := t.running.Pop(); more; i, rest, more = rest.Pop() {
		if !t.at[i].After(now) {
			out |= 1 << i
			t.at[i] = time.Time{}
		}
	}
	t.running &^= out
	return out
}

// wakeup is the single OS timer of an association. Sync
// (or Update) arms it only when the earliest deadline of the Timers moves
// earlier than the one it is armed for: stopping or postponing timers
// leaves it alone, and the loop then wakes early, finds nothing expired
// and syncs again. That keeps the number of timer resets per packet at
// zero in the steady state, when the T3-rtx and delayed-ack deadlines
// only move later.
type wakeup struct {
	// The loop selects on C(); after a receive from it, it calls Fired, then
	// handles Timers.Expired, then Sync. Wakeup is not safe for concurrent
	// use.

	timer *time.Timer
	at    time.Time
	armed bool
}

// newWakeupFunc returns a Wakeup whose timer calls f in its own goroutine
// when it fires (time.AfterFunc) instead of sending on C; f calls Fired
// first, under the lock that guards the Wakeup. C returns nil.
func newWakeupFunc(f func()) *wakeup {
	t := time.AfterFunc(time.Hour, f)
	t.Stop()
	return &wakeup{timer: t}
}

// newWakeup returns a Wakeup with its timer stopped.
func newWakeup() *wakeup {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &wakeup{timer: t}
}

// C returns the channel on which the timer delivers.
func (w *wakeup) C() <-chan time.Time { return w.timer.C }

// Armed returns the deadline the timer is armed for, if it is.
func (w *wakeup) Armed() (time.Time, bool) { return w.at, w.armed }

// Update arms the timer for next if it is not armed or is armed for a
// later deadline, and reports whether it did. With ok false (no timer
// running) it does nothing: a wake-up still pending is harmless.
func (w *wakeup) Update(next time.Time, ok bool, now time.Time) bool {
	if !ok || (w.armed && !next.Before(w.at)) {
		return false
	}
	w.timer.Reset(next.Sub(now))
	w.at, w.armed = next, true
	return true
}

// Sync arms the timer for the earliest deadline of t (see Update).
func (w *wakeup) Sync(t *timers, now time.Time) bool {
	next, _, ok := t.Next()
	return w.Update(next, ok, now)
}

// Fired records that the armed deadline was delivered on C.
func (w *wakeup) Fired() { w.armed = false }

// Stop stops the timer; the Wakeup can be armed again.
func (w *wakeup) Stop() {
	w.timer.Stop()
	w.armed = false
}
