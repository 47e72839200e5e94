// Package contract holds the parts of the backend contract that only the
// adaptation (sctpllp) and the in-tree backends use: the DDP-SSN window
// and the optional Transport methods the adaptation looks for.
package contract

import "github.com/sctp-rdma/sctp-rdma/sctpllp/backend"

// MaxSSNWindow is the largest distance ahead of the next expected DDP-SSN
// that a received chunk may have: the sender keeps at most 32767 chunks of
// a stream outstanding (RFC 5043 §10). A backend that queues messages
// itself keeps fewer than that in flight.
const MaxSSNWindow = 32767

// MaxOutstandingSegments is the number of DDP Segment chunks a backend
// lets one stream have outstanding before its writer waits: MaxSSNWindow
// less two chunks kept for the session control messages (a Terminate and
// an Accept/Reject), which flow control never holds back.
const MaxOutstandingSegments = MaxSSNWindow - 2

// AcceptBacklogger is implemented by a Transport whose stack queues only
// a few streams that the peer started and this side has not yet taken
// (pion/sctp: 16), discarding the DATA chunk that starts one more without
// acknowledging it. The peer then sends that chunk again only at its
// T3-rtx timeout, which doubles with each loss (RFC 9260 §6.3.3): when a
// burst of sessions opens at once, some Initiates come seconds late. The
// adaptation keeps at most AcceptBacklog Initiates unanswered by default
// (sctpllp.Config.MaxOpening), on the assumption that the peer runs the
// same stack.
type AcceptBacklogger interface {
	AcceptBacklog() int
}

// StatsReporter is the optional Transport method that reports the stack's
// Stats; sctpllp.Association.Stats includes them when the backend has it.
type StatsReporter interface {
	TransportStats() backend.Stats
}
