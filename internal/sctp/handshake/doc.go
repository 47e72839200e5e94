// Package handshake answers the unauthenticated packets of an SCTP
// listener without keeping state (RFC 9260 §5.1.3): the [Responder]
// (INIT → INIT ACK, COOKIE ECHO → verified [Cookie], ABORT for the out of
// the blue), the HMAC [CookieSigner] and the token bucket that rate-limits
// the answers. Package sctp's listener and the pion backend use it.
package handshake
