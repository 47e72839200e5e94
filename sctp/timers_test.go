package sctp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestTimerNames(t *testing.T) {
	want := map[timerID]string{
		timerT1Init: "T1-init", timerT1Cookie: "T1-cookie", timerT2Shutdown: "T2-shutdown",
		timerT3Rtx: "T3-rtx", timerT5ShutdownGuard: "T5-shutdown-guard", timerHeartbeat: "heartbeat",
		timerDelayedAck: "delayed-ack", timerReconfig: "reconfig", timerPLPMTUD: "plpmtud",
	}
	require.Len(t, want, int(numTimers))
	for id, name := range want {
		assert.Equal(t, name, id.String())
	}
	assert.Equal(t, "timer?", timerID(200).String())
}

func TestTimerSet(t *testing.T) {
	var s timerSet
	assert.True(t, s.Empty())
	_, _, ok := s.Pop()
	assert.False(t, ok)
	s = 1<<timerT3Rtx | 1<<timerDelayedAck | 1<<timerT1Init
	assert.Equal(t, 3, s.Len())
	assert.True(t, s.Has(timerT3Rtx))
	assert.False(t, s.Has(timerHeartbeat))
	assert.False(t, s.Has(timerID(40)))
	var got []timerID
	for id, rest, ok := s.Pop(); ok; id, rest, ok = rest.Pop() {
		got = append(got, id)
	}
	assert.Equal(t, []timerID{timerT1Init, timerT3Rtx, timerDelayedAck}, got)
}

func TestTimersSetStopNext(t *testing.T) {
	t0 := time.Now()
	var tm timers
	_, _, ok := tm.Next()
	assert.False(t, ok, "zero value: nothing running")

	tm.SetAfter(timerT3Rtx, t0, 3*time.Second)
	tm.SetAfter(timerHeartbeat, t0, 30*time.Second)
	tm.SetAfter(timerDelayedAck, t0, 200*time.Millisecond)
	at, id, ok := tm.Next()
	require.True(t, ok)
	assert.Equal(t, timerDelayedAck, id)
	assert.Equal(t, t0.Add(200*time.Millisecond), at)

	tm.Stop(timerDelayedAck)
	assert.False(t, tm.Running(timerDelayedAck))
	_, ok = tm.Deadline(timerDelayedAck)
	assert.False(t, ok)
	at, id, _ = tm.Next()
	assert.Equal(t, timerT3Rtx, id)
	assert.Equal(t, t0.Add(3*time.Second), at)

	// Restarting moves the deadline (RFC 9260 §6.3.2 R3 restarts T3-rtx).
	tm.SetAfter(timerT3Rtx, t0, 40*time.Second)
	at, id, _ = tm.Next()
	assert.Equal(t, timerHeartbeat, id)
	assert.Equal(t, t0.Add(30*time.Second), at)
	d, ok := tm.Deadline(timerT3Rtx)
	assert.True(t, ok)
	assert.Equal(t, t0.Add(40*time.Second), d)

	// Equal deadlines: the lowest id.
	tm.Set(timerT1Init, t0.Add(30*time.Second))
	_, id, _ = tm.Next()
	assert.Equal(t, timerT1Init, id)

	assert.Equal(t, timerSet(1<<timerT1Init|1<<timerT3Rtx|1<<timerHeartbeat), tm.RunningSet())
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
	var tm timers
	tm.SetAfter(timerT1Init, t0, time.Second)
	tm.SetAfter(timerT3Rtx, t0, 2*time.Second)
	tm.SetAfter(timerT5ShutdownGuard, t0, 5*time.Second)

	assert.True(t, tm.Expired(t0.Add(999*time.Millisecond)).Empty())
	// A deadline equal to now has expired.
	got := tm.Expired(t0.Add(2 * time.Second))
	assert.Equal(t, timerSet(1<<timerT1Init|1<<timerT3Rtx), got)
	assert.False(t, tm.Running(timerT1Init), "expired timers are stopped")
	assert.False(t, tm.Running(timerT3Rtx))
	assert.True(t, tm.Running(timerT5ShutdownGuard))
	assert.True(t, tm.Expired(t0.Add(2*time.Second)).Empty(), "reported once")
	assert.Equal(t, timerSet(1<<timerT5ShutdownGuard), tm.Expired(t0.Add(time.Hour)))
	_, _, ok := tm.Next()
	assert.False(t, ok)
}

func TestTimersNoAllocs(t *testing.T) {
	t0 := time.Now()
	var tm timers
	allocs := testing.AllocsPerRun(100, func() {
		tm.SetAfter(timerT3Rtx, t0, time.Second)
		tm.SetAfter(timerDelayedAck, t0, time.Millisecond)
		_, _, _ = tm.Next()
		for id, rest, ok := tm.Expired(t0.Add(time.Second)).Pop(); ok; id, rest, ok = rest.Pop() {
			_ = id
		}
	})
	assert.Zero(t, allocs)
}

func TestWakeupArmsOnlyEarlier(t *testing.T) {
	defer goleak.VerifyNone(t)
	w := newWakeup()
	defer w.Stop()
	now := time.Now()
	_, armed := w.Armed()
	assert.False(t, armed)

	var tm timers
	assert.False(t, w.Sync(&tm, now), "nothing to wait for")

	tm.SetAfter(timerT3Rtx, now, time.Hour)
	assert.True(t, w.Sync(&tm, now), "first deadline arms")
	at, armed := w.Armed()
	assert.True(t, armed)
	assert.Equal(t, now.Add(time.Hour), at)

	// Later or equal deadlines, and stopping, leave the timer alone.
	tm.SetAfter(timerHeartbeat, now, 2*time.Hour)
	assert.False(t, w.Sync(&tm, now))
	tm.SetAfter(timerT3Rtx, now, 3*time.Hour) // T3-rtx restarted later
	assert.False(t, w.Sync(&tm, now))
	tm.Stop(timerT3Rtx)
	assert.False(t, w.Sync(&tm, now))
	at, _ = w.Armed()
	assert.Equal(t, now.Add(time.Hour), at, "still armed for the earlier deadline: an early wake-up is harmless")

	// An earlier deadline re-arms.
	tm.SetAfter(timerDelayedAck, now, 20*time.Millisecond)
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
	assert.True(t, fired.Has(timerDelayedAck))
	assert.True(t, w.Sync(&tm, time.Now()), "after firing, the next deadline arms again")
	at, _ = w.Armed()
	assert.Equal(t, now.Add(2*time.Hour), at)
}

// A spurious early wake-up (the loop slept toward a deadline that was
// postponed) finds nothing expired and re-arms for the real deadline.
func TestWakeupEarlyWakeReArms(t *testing.T) {
	defer goleak.VerifyNone(t)
	w := newWakeup()
	defer w.Stop()
	var tm timers
	now := time.Now()
	tm.SetAfter(timerT3Rtx, now, 10*time.Millisecond)
	require.True(t, w.Sync(&tm, now))
	tm.SetAfter(timerT3Rtx, now, time.Hour) // postponed: no re-arm
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
	w := newWakeup()
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
	w := newWakeup()
	defer w.Stop()
	now := time.Now()
	var tm timers
	tm.SetAfter(timerT3Rtx, now, time.Hour)
	w.Sync(&tm, now)
	allocs := testing.AllocsPerRun(100, func() {
		tm.SetAfter(timerT3Rtx, now, time.Hour) // steady state: T3 restarted later
		w.Sync(&tm, now)
	})
	assert.Zero(t, allocs)
}
