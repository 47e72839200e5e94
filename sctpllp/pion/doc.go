// Package pion is the sctpllp backend on github.com/pion/sctp over UDP
// (RFC 6951 encapsulation): a backend.Transport per association, a
// listener that demultiplexes one UDP socket by peer address (udpmux.go)
// and answers INITs statelessly (pion_handshake.go, with sctp.Responder),
// the Adaptation Layer Indication pion lacks (pion_ali.go), dead-peer
// HEARTBEATs (deadpeer_pion.go) and optional PLPMTUD (pmtu_pion.go).
// Stack binds a Config for sctpllp.Config.Stack. The facts about pion
// this backend relies on: docs/sctp-userspace.md.
package pion
