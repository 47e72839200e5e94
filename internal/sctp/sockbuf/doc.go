// Package sockbuf sizes the UDP socket buffers under the userspace SCTP
// stacks (package sctp and the pion backend).
package sockbuf
