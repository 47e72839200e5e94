// Package kernel is the sctpllp backend on Linux kernel SCTP
// (github.com/ishidawataru/sctp sockets, one-to-one style): Stack's Dial and Listen
// return backend.Transport values that run the RFC 5043 adaptation over
// the kernel's associations, natively over IP or with RFC 6951 UDP
// encapsulation. It needs a kernel with SCTP (ErrUnavailable otherwise,
// and on other systems); the project tests it in a VM (scripts/vm,
// docs/kernel-sctp.md).
package kernel
