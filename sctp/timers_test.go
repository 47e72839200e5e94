package sctp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestTimerNames(t *testing.T) {
	want := map[TimerID]string{
		TimerT1Init: "T1-init", TimerT1Cookie: "T1-cookie", TimerT2Shutdown: "T2-shutdown",
		TimerT3Rtx: "T3-rtx", TimerT5ShutdownGuard: "T5-shutdown-guard", TimerHeartbeat: "heartbeat",
		TimerDelayedAck: "delayed-ack", TimerReconfig: "reconfig", TimerPLPMTUD: "plpmtud",
	}
	require.Len(t, want, int(numTimers))
	for id, name := range want {
		assert.Equal(t, name, id.String())
	}
	assert.Equal(t, "timer?", TimerID(200).String())
}

func TestTimerSet(t *testing.T) {
	var s TimerSet
	assert.True(t, s.Empty())
	_, _, ok := s.Pop()
	assert.False(t, ok)
	s = 1<<TimerT3Rtx | 1<<TimerDelayedAck | 1<<TimerT1Init
	assert.Equal(t, 3, s.Len())
	assert.True(t, s.Has(TimerT3Rtx))
	assert.False(t, s.Has(TimerHeartbeat))
	assert.False(t, s.Has(TimerID(40)))
	var got []TimerID
	for id, rest, ok := s.Pop(); ok; id, rest, ok = rest.Pop() {
		got = append(got, id)
	}
	assert.Equal(t, []TimerID{TimerT1Init, TimerT3Rtx, TimerDelayedAck}, got)
}

func TestTimersSetStopNext(t *testing.T) {
	t0 := time.Now()
	var tm Timers
	_, _, ok := tm.Next()
	assert.False(t, ok, "zero value: nothing running")

	tm.SetAfter(TimerT3Rtx, t0, 3*time.Second)
	tm.SetAfter(TimerHeartbeat, t0, 30*time.Second)
	tm.SetAfter(TimerDelayedAck, t0, 200*time.Millisecond)
	at, id, ok := tm.Next()
	require.True(t, ok)
	assert.Equal(t, TimerDelayedAck, id)
	assert.Equal(t, t0.Add(200*time.Millisecond), at)

	tm.Stop(TimerDelayedAck)
	assert.False(t, tm.Running(TimerDelayedAck))
	_, ok = tm.Deadline(TimerDelayedAck)
	assert.False(t, ok)
	at, id, _ = tm.Next()
	assert.Equal(t, TimerT3Rtx, id)
	assert.Equal(t, t0.Add(3*time.Second), at)

	// Restarting moves the deadline (RFC 9260 §6.3.2 R3 restarts T3-rtx).
	tm.SetAfter(TimerT3Rtx, t0, 40*time.Second)
	at, id, _ = tm.Next()
	assert.Equal(t, TimerHeartbeat, id)
	assert.Equal(t, t0.Add(30*time.Second), at)
	d, ok := tm.Deadline(TimerT3Rtx)
	assert.True(t, ok)
	assert.Equal(t, t0.Add(40*time.Second), d)

	// Equal deadlines: the lowest id.
	tm.Set(TimerT1Init, t0.Add(30*time.Second))
	_, id, _ = tm.Next()
	assert.Equal(t, TimerT1Init, id)

	assert.Equal(t, TimerSet(1<<TimerT1Init|1<<TimerT3Rtx|1<<TimerHeartbeat), tm.RunningSet())
	tm.StopAll()
	assert.True(t, tm.RunningSet().Empty())

	// Unknown ids are ignored.
	tm.Set(numTimers, t0)
	tm.Stop(numTimers + 3)
	assert.False(t, tm.Running(numTimers))
	assert.True(t, tm.RunningSet().Empty())
}

func TestTimersExpired(t *testing.T) {
	t0 := time.Now()
	var tm Timers
	tm.SetAfter(TimerT1Init, t0, time.Second)
	tm.SetAfter(TimerT3Rtx, t0, 2*time.Second)
	tm.SetAfter(TimerT5ShutdownGuard, t0, 5*time.Second)

	assert.True(t, tm.Expired(t0.Add(999*time.Millisecond)).Empty())
	// A deadline equal to now has expired.
	got := tm.Expired(t0.Add(2 * time.Second))
	assert.Equal(t, TimerSet(1<<TimerT1Init|1<<TimerT3Rtx), got)
	assert.False(t, tm.Running(TimerT1Init), "expired timers are stopped")
	assert.False(t, tm.Running(TimerT3Rtx))
	assert.True(t, tm.Running(TimerT5ShutdownGuard))
	assert.True(t, tm.Expired(t0.Add(2*time.Second)).Empty(), "reported once")
	assert.Equal(t, TimerSet(1<<TimerT5ShutdownGuard), tm.Expired(t0.Add(time.Hour)))
	_, _, ok := tm.Next()
	assert.False(t, ok)
}

func TestTimersNoAllocs(t *testing.T) {
	t0 := time.Now()
	var tm Timers
	allocs := testing.AllocsPerRun(100, func() {
		tm.SetAfter(TimerT3Rtx, t0, time.Second)
		tm.SetAfter(TimerDelayedAck, t0, time.Millisecond)
		_, _, _ = tm.Next()
		for id, rest, ok := tm.Expired(t0.Add(time.Second)).Pop(); ok; id, rest, ok = rest.Pop() {
			_ = id
		}
	})
	assert.Zero(t, allocs)
}

func TestWakeupArmsOnlyEarlier(t *testing.T) {
	defer goleak.VerifyNone(t)
	w := NewWakeup()
	defer w.Stop()
	now := time.Now()
	_, armed := w.Armed()
	assert.False(t, armed)

	var tm Timers
	assert.False(t, w.Sync(&tm, now), "nothing to wait for")

	tm.SetAfter(TimerT3Rtx, now, time.Hour)
	assert.True(t, w.Sync(&tm, now), "first deadline arms")
	at, armed := w.Armed()
	assert.True(t, armed)
	assert.Equal(t, now.Add(time.Hour), at)

	// Later or equal deadlines, and stopping, leave the timer alone.
	tm.SetAfter(TimerHeartbeat, now, 2*time.Hour)
	assert.False(t, w.Sync(&tm, now))
	tm.SetAfter(TimerT3Rtx, now, 3*time.Hour) // T3-rtx restarted later
	assert.False(t, w.Sync(&tm, now))
	tm.Stop(TimerT3Rtx)
	assert.False(t, w.Sync(&tm, now))
	at, _ = w.Armed()
	assert.Equal(t, now.Add(time.Hour), at, "still armed for the earlier deadline: an early wake-up is harmless")

	// An earlier deadline re-arms.
	tm.SetAfter(TimerDelayedAck, now, 20*time.Millisecond)
	assert.True(t, w.Sync(&tm, now))
	select {
	case <-w.C():
	case <-time.After(10 * time.Second):
		t.Fatal("wake-up did not fire")
	}
	w.Fired()
	_, armed = w.Armed()
	assert.False(t, armed)
	fired := tm.Expired(time.Now())
	assert.True(t, fired.Has(TimerDelayedAck))
	assert.True(t, w.Sync(&tm, time.Now()), "after firing, the next deadline arms again")
	at, _ = w.Armed()
	assert.Equal(t, now.Add(2*time.Hour), at)
}

// A spurious early wake-up (the loop slept toward a deadline that was
// postponed) finds nothing expired and re-arms for the real deadline.
func TestWakeupEarlyWakeReArms(t *testing.T) {
	defer goleak.VerifyNone(t)
	w := NewWakeup()
	defer w.Stop()
	var tm Timers
	now := time.Now()
	tm.SetAfter(TimerT3Rtx, now, 10*time.Millisecond)
	require.True(t, w.Sync(&tm, now))
	tm.SetAfter(TimerT3Rtx, now, time.Hour) // postponed: no re-arm
	require.False(t, w.Sync(&tm, now))
	select {
	case <-w.C():
	case <-time.After(10 * time.Second):
		t.Fatal("wake-up did not fire")
	}
	w.Fired()
	assert.True(t, tm.Expired(time.Now()).Empty())
	assert.True(t, w.Sync(&tm, time.Now()))
	at, _ := w.Armed()
	assert.Equal(t, now.Add(time.Hour), at)
}

func TestWakeupStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	w := NewWakeup()
	now := time.Now()
	require.True(t, w.Update(now.Add(5*time.Millisecond), true, now))
	w.Stop()
	_, armed := w.Armed()
	assert.False(t, armed)
	select {
	case <-w.C():
		t.Fatal("a stopped Wakeup delivered")
	case <-time.After(30 * time.Millisecond):
	}
	assert.True(t, w.Update(now.Add(time.Hour), true, now), "re-armable after Stop")
	w.Stop()
}

func TestWakeupUpdateNoAllocs(t *testing.T) {
	w := NewWakeup()
	defer w.Stop()
	now := time.Now()
	var tm Timers
	tm.SetAfter(TimerT3Rtx, now, time.Hour)
	w.Sync(&tm, now)
	allocs := testing.AllocsPerRun(100, func() {
		tm.SetAfter(TimerT3Rtx, now, time.Hour) // steady state: T3 restarted later
		w.Sync(&tm, now)
	})
	assert.Zero(t, allocs)
}
