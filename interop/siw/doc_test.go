// Package siw interoperates with Linux siw (Soft-iWARP) and rdma-core's
// tools: implementations of rdma-core's rping exchange and of perftest's
// bandwidth tests with -R (ib_write_bw, ib_read_bw, ib_send_bw; client and
// server each) on this module's MPA (RFC 5044, RFC 6581) and RDMAP
// (RFC 5040) layers, and TestSiwInterop, which boots a throw-away VM with
// siw (scripts/vm/siw-run.sh) and runs our clients against the tools'
// servers and the tools' clients against our servers. See
// docs/siw-interop.md. It is a test harness, not an API: every file is a
// _test.go file.
package siw
