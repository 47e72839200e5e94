// Package rdmapconf configures an rdmap.EndpointConfig from the outcome of
// an enhanced RDMA connection establishment (RFC 6581 §9), the same way
// for every LLP: package transport (MPA), package streams (SCTP session
// control) and the interoperability tests share it.
package rdmapconf

import (
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/internal/rdmaphook"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// SetRTR fills c's SendRTR and ExpectRTR (RFC 6581 §9.2, §9.3): with the
// peer-to-peer model the Initiator sends one of the negotiated options — a
// zero-length Write, else Read, else Send, the order Linux siw prefers —
// and the Responder expects any of those it advertised. With the
// client-server model (peerToPeer false) there is no RTR.
func SetRTR(c *rdmap.EndpointConfig, initiator, peerToPeer bool, negotiated iwarp.RTR) {
	c.SendRTR, c.ExpectRTR = 0, 0
	if !peerToPeer {
		return
	}
	if !initiator {
		c.ExpectRTR = negotiated
		return
	}
	c.SendRTR = iwarpwire.PickRTR(negotiated)
}

// Apply sets c's IRD and ORD to the negotiated queue depths d (RFC 6581
// §9.1; iwarp.NoNegotiation leaves c's value, a negotiated 0 means none: a
// responder IRD of 0 allows the initiator no RDMA Read) and its RTR role
// in the peer-to-peer model (SetRTR).
func Apply(c *rdmap.EndpointConfig, initiator bool, d iwarp.Depths, peerToPeer bool, negotiated iwarp.RTR) {
	depth := func(v int, keep int) int {
		switch {
		case v == iwarp.NoNegotiation:
			return keep
		case v <= 0:
			return -1 // EndpointConfig: negative is none, 0 the default
		}
		return v
	}
	c.IRD = depth(d.IRD, c.IRD)
	c.ORD = depth(d.ORD, c.ORD)
	SetRTR(c, initiator, peerToPeer, negotiated)
}

// AfterDone runs f in a goroutine of its own once ep has finished (Done
// is closed), at once if it has: a watcher of many endpoints uses it
// instead of a goroutine blocked on each Done.
func AfterDone(ep *rdmap.Endpoint, f func()) { rdmaphook.AfterDone(ep, f) }
