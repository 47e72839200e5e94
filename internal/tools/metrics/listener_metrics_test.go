package metrics

import (
	"context"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/procstat"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// scrape returns the value of each series of /metrics at addr without
// labels, by name.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+) (\S+)$`).FindAllStringSubmatch(string(b), -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err, m[0])
		out[m[1]] = v
	}
	return out
}

// TestScrapeListenerAndBudget: /metrics of a serving sctp-native listener
// carries the listeners' association counters (procstat.ListenerTotals) and
// the process-wide receive budget (procstat.Memory), used, limit,
// refusals and reclaims; an association dialled in shows as held.
func TestScrapeListenerAndBudget(t *testing.T) {
	ln, err := transport.Listen(transport.Options{LLP: transport.SCTPNative}, "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, wait, err := Listen(ctx, "127.0.0.1:0", Source{Server: idleServer, Listener: ln})
	require.NoError(t, err)
	defer func() { cancel(); wait() }()

	name := func(s string) string { return Namespace + "_" + s }
	before := scrape(t, addr.String())
	for _, s := range []string{"sctp_listener_associations", "sctp_listener_queue_drops_total", "sctp_listener_evicted_total",
		"sctp_listener_stalled_total", "sctp_listener_rebinds_total", "sctp_listener_unbound_drops_total", "sctp_receive_memory_held_bytes",
		"sctp_receive_memory_limit_bytes", "sctp_receive_memory_refused_total", "sctp_receive_memory_reclaims_total"} {
		assert.Contains(t, before, name(s))
	}
	assert.Equal(t, float64(procstat.Memory().Limit), before[name("sctp_receive_memory_limit_bytes")])

	a, err := sctp.Dial(ctx, "udp4", ln.Addr(), nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return scrape(t, addr.String())[name("sctp_listener_associations")] == before[name("sctp_listener_associations")]+1
	}, 10*time.Second, 10*time.Millisecond, "the dialled association is held by the listener")
	require.NoError(t, a.Abort())
	require.Eventually(t, func() bool {
		return scrape(t, addr.String())[name("sctp_listener_associations")] == before[name("sctp_listener_associations")]
	}, 10*time.Second, 10*time.Millisecond, "and gone once aborted")
	assert.Equal(t, float64(procstat.ListenerTotals().QueueDrops), scrape(t, addr.String())[name("sctp_listener_queue_drops_total")])
}
