package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scrape fetches url and returns the Prometheus text exposition.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// metric sums the samples of name whose labels include every pair of
// want (written `key="value"`), and reports whether any matched.
func metric(body, name string, want ...string) (float64, bool) {
	var sum float64
	found := false
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		head, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, labels, _ := strings.Cut(head, "{")
		if n != name {
			continue
		}
		match := true
		for _, w := range want {
			if !strings.Contains(labels, w) {
				match = false
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err == nil {
			sum += v
			found = true
		}
	}
	return sum, found
}

// TestServeMetricsDuringBench scrapes `serve --metrics` while a bench runs
// against it and after, over each userspace LLP, and checks the counters
// against what the bench did: the Writes it reports are the Writes the
// server received (RFC 5040 §5.1, its passive side), every octet was
// placed, each stream shows up live with its own counters, and over SCTP
// (both userspace stacks) one Session Initiate was received per stream
// (RFC 5043 §6.1), the SRTT is exported and one INIT was answered
// statelessly (RFC 9260 §5.1.3). The
// final JSON summary carries the same figures.
func TestServeMetricsDuringBench(t *testing.T) {
	for _, llp := range []string{"sctp-native", "sctp-pion", "mpa"} {
		t.Run(llp, func(t *testing.T) {
			sctp := strings.HasPrefix(llp, "sctp-")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out, errOut := &lockedBuffer{}, &lockedBuffer{}
			code := make(chan int, 1)
			go func() {
				code <- runCtx(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--llp", llp, "--json", "--metrics", "127.0.0.1:0"}, out, errOut)
			}()
			var ev struct{ Event, Addr, Metrics string }
			require.Eventually(t, func() bool {
				line, _, _ := strings.Cut(out.String(), "\n")
				return json.Unmarshal([]byte(line), &ev) == nil && ev.Addr != ""
			}, 5*time.Second, time.Millisecond, errOut.String())
			require.True(t, strings.HasPrefix(ev.Metrics, "http://"), ev.Metrics)

			const size, streams = 4096, 2
			type res struct {
				code     int
				out, err string
			}
			bdone := make(chan res, 1)
			go func() {
				c, o, e := runCLI("bench", "--llp", llp, "--connect", ev.Addr, "--duration", "2s", "--streams", strconv.Itoa(streams),
					"--size", strconv.Itoa(size), "--json", "write")
				bdone <- res{c, o, e}
			}()
			// During the run: both streams live, each with Writes placed.
			require.Eventually(t, func() bool {
				body := scrape(t, ev.Metrics)
				active, _ := metric(body, "sctp_rdma_streams_active")
				s1, ok1 := metric(body, "sctp_rdma_stream_messages_received_total", `opcode="write"`, `stream="`)
				placed, _ := metric(body, "sctp_rdma_stream_placed_bytes_total")
				return active == streams && ok1 && s1 > 10 && placed >= s1*size
			}, 10*time.Second, 50*time.Millisecond)
			body := scrape(t, ev.Metrics)
			if sctp {
				live, _ := metric(body, "sctp_rdma_associations_active")
				assert.Equal(t, 1.0, live)
				_, hasRTT := metric(body, "sctp_rdma_association_srtt_seconds", `llp="`+llp+`"`)
				assert.True(t, hasRTT, "the stack's SRTT is exported")
			}

			r := <-bdone
			require.Equal(t, 0, r.code, r.err)
			var br jsonResult
			require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(r.out)), &br), r.out)
			require.Positive(t, br.Forward.Ops)

			// After the run: the totals match what the bench did.
			var writes float64
			require.Eventually(t, func() bool {
				body = scrape(t, ev.Metrics)
				fin, _ := metric(body, "sctp_rdma_streams_finished_total")
				writes, _ = metric(body, "sctp_rdma_messages_received_total", `opcode="write"`)
				return fin == streams
			}, 10*time.Second, 20*time.Millisecond)
			assert.Equal(t, float64(br.Forward.Ops), writes, "Writes received = Writes the bench completed")
			// Placed: the Writes' octets and the bench's own Setup/Advert
			// messages (a few dozen octets per stream).
			placed, _ := metric(body, "sctp_rdma_placed_bytes_total")
			assert.GreaterOrEqual(t, placed, float64(br.Forward.Ops*size))
			assert.LessOrEqual(t, placed, float64(br.Forward.Ops*size+streams*256))
			fences, _ := metric(body, "sctp_rdma_messages_sent_total", `opcode="read_response"`)
			assert.Equal(t, float64(streams), fences, "one zero-length Read fences each Write stream")
			terms, _ := metric(body, "sctp_rdma_terminates_total")
			assert.Zero(t, terms)
			if sctp {
				ini, _ := metric(body, "sctp_rdma_session_control_total", `direction="received"`, `function="enhanced_initiate"`)
				plain, _ := metric(body, "sctp_rdma_session_control_total", `direction="received"`, `function="initiate"`)
				assert.Equal(t, float64(streams), ini+plain, "one Initiate per stream")
				acc, _ := metric(body, "sctp_rdma_session_control_total", `direction="sent"`, `function="enhanced_accept"`)
				accPlain, _ := metric(body, "sctp_rdma_session_control_total", `direction="sent"`, `function="accept"`)
				assert.Equal(t, float64(streams), acc+accPlain)
				_, ok := metric(body, "sctp_rdma_sctp_retransmitted_chunks_total")
				assert.True(t, ok)
				// RFC 9260 §5.1.3: one INIT answered statelessly, one
				// COOKIE ECHO accepted, nothing dropped.
				acks, _ := metric(body, "sctp_rdma_sctp_handshake_packets_total", `outcome="init_ack_sent"`)
				cookies, _ := metric(body, "sctp_rdma_sctp_handshake_packets_total", `outcome="cookie_ok"`)
				foreign, _ := metric(body, "sctp_rdma_sctp_handshake_packets_total", `outcome="foreign_tag"`)
				assert.Equal(t, 1.0, acks)
				assert.Equal(t, 1.0, cookies)
				assert.Zero(t, foreign)
			} else {
				crc, ok := metric(body, "sctp_rdma_mpa_crc_errors_total")
				assert.True(t, ok)
				assert.Zero(t, crc)
			}
			_, ok := metric(body, "go_goroutines")
			assert.True(t, ok, "the Go runtime collector is registered")

			cancel()
			require.Equal(t, 0, <-code, errOut.String())
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			var last struct {
				Event    string
				Counters struct {
					StreamsFinished uint64 `json:"streams_finished"`
					RDMAP           struct {
						Received     map[string]uint64 `json:"messages_received"`
						OctetsPlaced uint64            `json:"octets_placed"`
					} `json:"rdmap"`
				}
			}
			require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
			assert.Equal(t, "stopped", last.Event)
			assert.Equal(t, uint64(streams), last.Counters.StreamsFinished)
			assert.Equal(t, br.Forward.Ops, last.Counters.RDMAP.Received["write"])
			assert.InDelta(t, br.Forward.Ops*size, last.Counters.RDMAP.OctetsPlaced, streams*256)
		})
	}
}

// TestServeSummaryOneSided: the text summary of a server that only saw
// one-sided operations says what it placed and sent, not "0 octets".
func TestServeSummaryOneSided(t *testing.T) {
	addr, stop := serve(t, "--llp", "sctp-pion")
	c, _, e := runCLI("bench", "--llp", "sctp-pion", "--connect", addr, "--iters", "50", "--size", "1000", "read")
	require.Equal(t, 0, c, e)
	out := stop()
	assert.Contains(t, out, "octets sent in Sends and Read Responses")
	assert.Regexp(t, `RDMAP: \d+ octets placed .*, 5\d{4} octets sent`, out)
	assert.Contains(t, out, "read_request")
	assert.Regexp(t, `SCTP: 1 associations \(0 live, 0 closed for having no session\); session control received: 1 terminate, 1 (enhanced_)?initiate`, out)
}
