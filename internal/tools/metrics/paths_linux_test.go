//go:build linux

package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/netns"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// TestPerPathMetrics_RFC9260_6_4: a multihomed sctp-native association
// served in one network namespace and dialled from both addresses of
// another shows each destination in the snapshot (state, primary, SRTT,
// RTO, octets, errors) and in /metrics (sctp_rdma_path_*).
func TestPerPathMetrics_RFC9260_6_4(t *testing.T) {
	require.Zero(t, os.Geteuid(), "needs root: network namespaces (make test runs as root)")
	d, err := netns.NewDualPath(1500)
	require.NoError(t, err)
	t.Cleanup(d.Destroy)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var ln *transport.Listener
	require.NoError(t, netns.In(d.A, func() (err error) {
		ln, err = transport.Listen(transport.Options{}, fmt.Sprintf("%s/%s:7400", d.AAddr[0], d.AAddr[1]))
		return err
	}))
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ln.Serve(sctx, new(rdmap.Device).AllocPD(), &transport.HandlerFuncs{}) }()
	defer func() { stop(); require.NoError(t, <-served) }()

	o := transport.Options{Native: transport.SCTPOptions{LocalAddr: d.BAddr[0] + "/" + d.BAddr[1]}}
	var cl *transport.Client
	require.NoError(t, netns.In(d.B, func() (err error) {
		cl, err = transport.Dial(ctx, o, ln.Addr(), 1, new(rdmap.Device).AllocPD(), nil)
		return err
	}))
	defer cl.Abort()

	var paths []Path
	require.Eventually(t, func() bool {
		s := Take(Source{Server: idleServer, Listener: ln})
		if len(s.PerAssociation) != 1 {
			return false
		}
		paths = s.PerAssociation[0].Paths
		active := 0
		for _, p := range paths {
			if p.State == "active" && p.PLPMTU >= 1200 {
				active++
			}
		}
		return len(paths) == 2 && active == 2
	}, 20*time.Second, 20*time.Millisecond, "both of the client's addresses are active paths of the server's association, each probed (RFC 8899): %+v", paths)
	primaries := 0
	for _, p := range paths {
		if p.Primary {
			primaries++
			assert.Positive(t, p.RTOSeconds)
			assert.Positive(t, p.CwndBytes)
		}
	}
	assert.Equal(t, 1, primaries, "one primary path: %+v", paths)

	addr, wait, err := Listen(ctx, "127.0.0.1:0", Source{Server: idleServer, Listener: ln})
	require.NoError(t, err)
	defer func() { cancel(); wait() }()
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	states := regexp.MustCompile(`(?m)^`+Namespace+`_path_state\{[^}]*state="active"[^}]*\} 1$`).FindAllString(string(body), -1)
	assert.Len(t, states, 2, "a path_state series per path")
	for _, s := range []string{"path_srtt_seconds", "path_rto_seconds", "path_cwnd_bytes", "path_sent_bytes_total", "path_errors", "path_plpmtu_bytes"} {
		assert.Len(t, regexp.MustCompile(`(?m)^`+Namespace+"_"+s+`\{`).FindAllString(string(body), -1), 2, s)
	}
}
