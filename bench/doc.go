// Package bench holds the Go benchmarks of sctp-rdma's public API: RDMA
// Write, Read and Send through transport and rdmap on each LLP, written
// as a user's program would write them (go test -bench . ./bench).
//
// The perftest-like tool is the CLI's serve and bench (docs/cli.md); its
// engine and the harness that compares it with the raw LLPs are tools,
// under internal/tools (docs/benchmarks.md).
package bench
