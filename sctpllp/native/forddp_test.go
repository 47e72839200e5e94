package native

import (
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/ccname"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sctp-rdma/sctp-rdma/sctp"
)

// TestForDDPDefaults: a DDP association of the native stack takes only
// unordered DATA (RFC 5043 §10), TCP's RTO floor, the default congestion
// control and slow start unless its configuration says otherwise.
func TestForDDPDefaults(t *testing.T) {
	c := forDDP(Config{})
	assert.True(t, c.UnorderedOnly)
	assert.Equal(t, defaultRTOMin, c.RTO.Min)
	assert.Equal(t, DefaultCongestionControl, c.CongestionControl)
	assert.Equal(t, ccname.CongestionCUBIC, c.CongestionControl, "CUBIC for DDP, as Linux TCP beside it")
	assert.Equal(t, defaultSlowStart, c.SlowStart)

	c = forDDP(Config{RTO: sctp.RTOConfig{Min: time.Second}, CongestionControl: ccname.CongestionRFC9260, SlowStart: ccname.SlowStartHyStart})
	assert.Equal(t, time.Second, c.RTO.Min)
	assert.Equal(t, ccname.CongestionRFC9260, c.CongestionControl, "a choice is kept")
	assert.Equal(t, ccname.SlowStartHyStart, c.SlowStart)
}
