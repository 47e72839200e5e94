package sctp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

func TestRTODefaults_RFC9260_16(t *testing.T) {
	e := newRTOEstimator(RTOConfig{})
	assert.Equal(t, RTOConfig{Initial: time.Second, Min: time.Second, Max: 60 * time.Second, Granularity: ms}, e.Config())
	// RFC 9260 §6.3.1 C1: RTO.Initial until a measurement is made.
	assert.Equal(t, time.Second, e.RTO())
	assert.False(t, e.Measured())
	assert.Zero(t, e.SRTT())
	assert.Zero(t, e.RTTVAR())
}

func TestRTOConfigNormalized(t *testing.T) {
	cases := []struct {
		name string
		in   RTOConfig
		want RTOConfig
	}{
		{"loopback floor", RTOConfig{Min: 10 * ms},
			RTOConfig{Initial: time.Second, Min: 10 * ms, Max: 60 * time.Second, Granularity: ms}},
		{"max below min is raised", RTOConfig{Min: 2 * time.Second, Max: time.Second},
			RTOConfig{Initial: 2 * time.Second, Min: 2 * time.Second, Max: 2 * time.Second, Granularity: ms}},
		{"initial clamped to max", RTOConfig{Initial: time.Minute, Min: ms, Max: time.Second},
			RTOConfig{Initial: time.Second, Min: ms, Max: time.Second, Granularity: ms}},
		{"initial clamped to min", RTOConfig{Initial: ms, Min: 10 * ms},
			RTOConfig{Initial: 10 * ms, Min: 10 * ms, Max: 60 * time.Second, Granularity: ms}},
		{"negative means default", RTOConfig{Initial: -1, Min: -1, Max: -1, Granularity: -1},
			RTOConfig{Initial: time.Second, Min: time.Second, Max: 60 * time.Second, Granularity: ms}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newRTOEstimator(c.in)
			assert.Equal(t, c.want, e.Config())
			assert.Equal(t, c.want.Initial, e.RTO())
		})
	}
}

// Hand-computed: RTO.Alpha 1/8, RTO.Beta 1/4, K = 4, G = 1 ms, RTO.Min 10 ms.
func TestRTOObserve_RFC9260_6_3_1_C2_C3_Table(t *testing.T) {
	e := newRTOEstimator(RTOConfig{Min: 10 * ms})
	steps := []struct {
		r, srtt, rttvar, rto time.Duration
	}{
		// C2: SRTT = 100, RTTVAR = 50, RTO = 100 + 4*50.
		{100 * ms, 100 * ms, 50 * ms, 300 * ms},
		// C3: RTTVAR = (3*50 + |100-140|)/4 = 47.5; SRTT = (7*100 + 140)/8 = 105.
		{140 * ms, 105 * ms, 47500 * time.Microsecond, 295 * ms},
		// RTTVAR = (3*47.5 + |105-60|)/4 = 46.875; SRTT = (7*105 + 60)/8 = 99.375.
		{60 * ms, 99375 * time.Microsecond, 46875 * time.Microsecond, 286875 * time.Microsecond},
		// RTTVAR = (3*46.875 + |99.375-99.375|)/4 = 35.15625; SRTT unchanged.
		{99375 * time.Microsecond, 99375 * time.Microsecond, 35156250 * time.Nanosecond, 240 * ms},
	}
	for i, s := range steps {
		e.Observe(s.r)
		require.True(t, e.Measured())
		assert.Equal(t, s.srtt, e.SRTT(), "step %d SRTT", i)
		assert.Equal(t, s.rttvar, e.RTTVAR(), "step %d RTTVAR", i)
		assert.Equal(t, s.rto, e.RTO(), "step %d RTO", i)
	}
}

func TestRTOMinFloor_RFC9260_6_3_1_C6(t *testing.T) {
	e := newRTOEstimator(RTOConfig{}) // RTO.Min = 1 s
	e.Observe(100 * ms)               // 100 + 4*50 = 300 ms
	assert.Equal(t, time.Second, e.RTO(), "rounded up to RTO.Min")
	assert.Equal(t, 100*ms, e.SRTT(), "SRTT itself is not clamped")

	lo := newRTOEstimator(RTOConfig{Min: 10 * ms})
	lo.Observe(time.Microsecond) // SRTT 1 µs, RTTVAR floored at G = 1 ms: 4.001 ms
	assert.Equal(t, 10*ms, lo.RTO())
}

func TestRTOMaxCeiling_RFC9260_6_3_1_C7(t *testing.T) {
	e := newRTOEstimator(RTOConfig{Min: 10 * ms, Max: 2 * time.Second})
	e.Observe(time.Second) // 1 + 4*0.5 = 3 s
	assert.Equal(t, 2*time.Second, e.RTO())
}

func TestRTOGranularity_RFC9260_6_3_1_G1(t *testing.T) {
	e := newRTOEstimator(RTOConfig{Min: ms, Granularity: ms})
	e.Observe(0) // SRTT 0, RTTVAR 0 -> G
	assert.Equal(t, ms, e.RTTVAR())
	assert.Equal(t, 4*ms, e.RTO())

	// A perfectly steady path: RTTVAR decays by 3/4 per sample down to G,
	// so the RTO settles at SRTT + 4G and never at SRTT itself.
	e = newRTOEstimator(RTOConfig{Min: ms, Granularity: ms})
	for i := 0; i < 100; i++ {
		e.Observe(20 * ms)
	}
	assert.Equal(t, 20*ms, e.SRTT())
	assert.Equal(t, ms, e.RTTVAR())
	assert.Equal(t, 24*ms, e.RTO())
}

func TestRTOBackoff_RFC9260_6_3_3_E2(t *testing.T) {
	e := newRTOEstimator(RTOConfig{Min: 10 * ms, Max: 5 * time.Second})
	// Before any measurement the back-off applies to RTO.Initial (C1 + E2).
	e.Backoff()
	assert.Equal(t, 2*time.Second, e.RTO())
	e.Backoff()
	assert.Equal(t, 4*time.Second, e.RTO())
	e.Backoff()
	assert.Equal(t, 5*time.Second, e.RTO(), "capped at RTO.Max")
	e.Backoff()
	assert.Equal(t, 5*time.Second, e.RTO())

	// A new measurement recomputes the RTO from SRTT/RTTVAR.
	e.Observe(100 * ms)
	assert.Equal(t, 300*ms, e.RTO())
	want := []time.Duration{600 * ms, 1200 * ms, 2400 * ms, 4800 * ms, 5 * time.Second}
	for _, w := range want {
		e.Backoff()
		assert.Equal(t, w, e.RTO())
	}
}

func TestRTOBackoffNoOverflow_RFC9260_6_3_3_E2(t *testing.T) {
	e := newRTOEstimator(RTOConfig{Max: time.Duration(1<<62 + 1)})
	for i := 0; i < 200; i++ {
		e.Backoff()
		require.Positive(t, e.RTO())
	}
	assert.Equal(t, time.Duration(1<<62+1), e.RTO())
}

func TestRTOObserveRejectsNegative(t *testing.T) {
	e := newRTOEstimator(RTOConfig{})
	e.Observe(-time.Second)
	assert.False(t, e.Measured())
	assert.Equal(t, time.Second, e.RTO())
}

func TestRTOObserveHugeSampleIsBounded(t *testing.T) {
	e := newRTOEstimator(RTOConfig{})
	e.Observe(time.Duration(1 << 62))
	assert.Equal(t, time.Hour, e.SRTT())
	e.Observe(time.Duration(1 << 62))
	assert.Equal(t, time.Hour, e.SRTT())
	assert.Equal(t, 60*time.Second, e.RTO())
}

func TestRTONoAllocs(t *testing.T) {
	e := newRTOEstimator(RTOConfig{Min: 10 * ms})
	allocs := testing.AllocsPerRun(100, func() {
		e.Observe(30 * ms)
		e.Backoff()
		_ = e.RTO()
	})
	assert.Zero(t, allocs)
}
