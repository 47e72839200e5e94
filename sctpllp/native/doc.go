// Package native is the sctpllp backend on the project's own userspace SCTP
// stack (package sctp) over UDP (RFC 6951): a backend.Transport per
// association, plain (dial, listen) or inside DTLS (dialDTLS, listenDTLS;
// RFC 8261). Associations it makes carry the DDP Adaptation Layer
// Indication and accept unordered DATA only (RFC 5043 §5.1, §10); the
// listener keeps no state for a peer before a valid COOKIE ECHO (RFC 9260
// §5.1.3, sctp.Responder).
package native
