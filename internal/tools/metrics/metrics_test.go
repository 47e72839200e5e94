package metrics

import (
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCollectorLint: every metric follows the Prometheus naming and help
// conventions (promlint), for an idle server over each LLP.
func TestCollectorLint(t *testing.T) {
	for _, llp := range []string{transport.SCTPPion, transport.MPA} {
		ln, err := transport.Listen(transport.Options{LLP: llp}, "127.0.0.1:0")
		require.NoError(t, err)
		c := NewCollector(Source{Server: idleServer, Listener: ln})
		problems, err := testutil.CollectAndLint(c)
		require.NoError(t, err)
		assert.Empty(t, problems, llp)
		n, err := testutil.GatherAndCount(newRegistry(c))
		require.NoError(t, err)
		assert.Greater(t, n, 40, "every server-wide series is present when idle")
		used, err := testutil.GatherAndCount(newRegistry(c), Namespace+"_sctp_receive_memory_held_bytes", Namespace+"_sctp_receive_memory_limit_bytes",
			Namespace+"_sctp_receive_memory_peak_bytes", Namespace+"_sctp_receive_memory_refused_total")
		require.NoError(t, err)
		assert.Equal(t, 4, used, "the process-wide receive memory budget")
		require.NoError(t, ln.Close())
	}
}

// TestSnapshotIdle: an idle server's snapshot lists every opcode and
// function with 0, and empty (not null) lists.
func TestSnapshotIdle(t *testing.T) {
	ln, err := transport.Listen(transport.Options{LLP: transport.SCTPPion}, "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	s := Take(Source{Server: idleServer, Listener: ln})
	assert.Equal(t, transport.SCTPPion, s.LLP)
	assert.Len(t, s.RDMAP.Sent, 12)
	assert.Len(t, s.SessionControl.Received, 7)
	assert.NotNil(t, s.PerStream)
	assert.NotNil(t, s.PerAssociation)
	assert.NotNil(t, s.Terminates)
}

// TestMetricNamesFollowConventions: Prometheus naming (issue 48): octet
// counts carry the base unit _bytes, never "octets"; durations _seconds;
// every counter ends in _total and no gauge does.
func TestMetricNamesFollowConventions(t *testing.T) {
	ln, err := transport.Listen(transport.Options{LLP: transport.SCTPNative}, "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c := NewCollector(Source{Server: idleServer, Listener: ln})
	ch := make(chan *prometheus.Desc, 100)
	c.Describe(ch)
	close(ch)
	nameRE := regexp.MustCompile(`fqName: "([^"]+)"`)
	var names []string
	for d := range ch {
		m := nameRE.FindStringSubmatch(d.String())
		require.NotNil(t, m, d.String())
		names = append(names, m[1])
	}
	require.Greater(t, len(names), 30)
	for _, n := range names {
		assert.True(t, strings.HasPrefix(n, Namespace+"_"), n)
		assert.NotContains(t, n, "octet", "%s: the unit is _bytes", n)
		for _, bad := range []string{"_ms", "_us", "_usec", "_millis", "_kb", "_mb", "_bits"} {
			assert.NotContains(t, n, bad, "%s: base units only", n)
		}
	}
	assert.Contains(t, names, "sctp_rdma_sent_bytes_total")
	assert.Contains(t, names, "sctp_rdma_placed_bytes_total")
	assert.Contains(t, names, "sctp_rdma_stream_sent_bytes_total")
	assert.Contains(t, names, "sctp_rdma_stream_placed_bytes_total")
	fams, err := newRegistry(c).Gather()
	require.NoError(t, err)
	require.NotEmpty(t, fams)
	for _, f := range fams {
		switch f.GetType().String() {
		case "COUNTER":
			assert.True(t, strings.HasSuffix(f.GetName(), "_total"), "counter %s ends in _total", f.GetName())
		case "GAUGE":
			assert.False(t, strings.HasSuffix(f.GetName(), "_total"), "gauge %s does not end in _total", f.GetName())
		}
	}
}

// idleServer is a server that has served nothing.
func idleServer() Served { return Served{MaxMemory: 1 << 30} }

// TestSnapshotServed: Take copies what the server counted, names each
// Terminate code and counts MPA CRC Terminates sent over MPA.
func TestSnapshotServed(t *testing.T) {
	ln, err := transport.Listen(transport.Options{LLP: transport.MPA}, "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var totals rdmap.Stats
	totals.OctetsPlaced = 4096
	served := Served{Active: 1, Reserved: 8192, MaxMemory: 1 << 30, Admitted: 3, RefusedBusy: 1, Finished: 2, Totals: totals,
		Terminates: []ServedTerminate{{Code: iwarp.Term.MPACRC, Sent: 2, Received: 1}},
		Streams:    []ServedStream{{LLP: transport.MPA, Peer: "127.0.0.1:9", Test: "write", Stats: totals}}}
	s := Take(Source{Server: func() Served { return served }, Listener: ln})
	assert.Equal(t, 1, s.StreamsActive)
	assert.Equal(t, uint64(3), s.Admitted)
	assert.Equal(t, uint64(1), s.RefusedBusy)
	assert.Equal(t, uint64(2), s.StreamsFinished)
	assert.Equal(t, int64(8192), s.MemoryReserved)
	assert.Equal(t, uint64(4096), s.RDMAP.OctetsPlaced)
	require.Len(t, s.Terminates, 1)
	assert.Equal(t, iwarp.Term.MPACRC.String(), s.Terminates[0].Name)
	assert.Equal(t, uint64(2), s.MPACRCErrors)
	require.Len(t, s.PerStream, 1)
	assert.Equal(t, Stream{LLP: transport.MPA, Peer: "127.0.0.1:9", Test: "write", RDMAP: rdmapOf(totals)}, s.PerStream[0])
}
