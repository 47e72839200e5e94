package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchServerStopped: a server stopped mid-run (its Ctrl-C or
// SIGTERM, here its context) ends the client's run with one line naming
// the cause, the same on every LLP, after the partial table, exit status 1.
func TestBenchServerStopped(t *testing.T) {
	for _, llp := range []string{"sctp-native", "sctp-pion", "mpa"} {
		t.Run(llp, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out, errOut := &lockedBuffer{}, &lockedBuffer{}
			code := make(chan int, 1)
			go func() {
				code <- runCtx(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--llp", llp, "--json", "--metrics", "127.0.0.1:0"}, out, errOut)
			}()
			var ev struct{ Addr, Metrics string }
			require.Eventually(t, func() bool {
				line, _, _ := strings.Cut(out.String(), "\n")
				return json.Unmarshal([]byte(line), &ev) == nil && ev.Addr != ""
			}, 5*time.Second, time.Millisecond, errOut.String())

			type res struct {
				code     int
				out, err string
			}
			bdone := make(chan res, 1)
			go func() {
				c, o, e := runCLI("bench", "--llp", llp, "--connect", ev.Addr, "--duration", "60", "--streams", "2", "--size", "4K", "write")
				bdone <- res{c, o, e}
			}()
			require.Eventually(t, func() bool {
				body := scrape(t, ev.Metrics)
				writes, _ := metric(body, "sctp_rdma_messages_received_total", `opcode="write"`)
				return writes > 10
			}, 10*time.Second, 20*time.Millisecond, "the run is under way")
			cancel() // the server is told to stop
			require.Equal(t, 0, <-code, errOut.String())

			r := <-bdone
			assert.Equal(t, 1, r.code)
			assert.Equal(t, "sctp-rdma bench: the server ended the run, in write 4K\n", r.err)
			assert.Contains(t, r.out, "(partial: what was measured before the run ended early; the cause follows)")
			assert.Regexp(t, `(?m)^ 4096 +all +[1-9]`, r.out, "what was measured is kept")
		})
	}
}
