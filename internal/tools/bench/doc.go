// Package bench is the perftest/rping-like benchmark of sctp-rdma: a
// server (Server, any number of clients and streams at once) and a client
// (Run) that measure RDMA Write, Read, Send, the RFC 7306 atomics and
// Write with Immediate Data as bandwidth, message rate and latency, per
// stream and aggregated, over any LLP of transport, and the verified
// rping-style exchange (TestPing).
//
// Each stream runs its own control exchange (docs/cli.md): Setup, Advert
// and Report travel as Sends, credits and the end-of-run marker as
// Immediate Data. The harness subpackage compares with the raw LLP.
package bench
