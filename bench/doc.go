// Package bench is the perftest/rping-like benchmark of sctp-rdma: a
// server (Server, the passive side, any number of clients and streams at
// once) and a client (Run) that measure RDMA Write, Read, Send, Atomic
// FetchAdd and CmpSwap (RFC 7306 §5) and Write with Immediate Data (RFC
// 7306 §6) as bandwidth, message rate and latency (min, median, p99, max),
// per stream and aggregated, over any LLP of transport, and the
// verified rping-style exchange (TestPing).
//
// Each stream runs its own control exchange, documented in docs/cli.md:
// Setup (setup.go), Advert (advert.go) and Report (report.go) travel as
// Sends; credits and the end-of-run marker as Immediate Data. The harness
// subpackage compares the figures with the raw LLP.
package bench
