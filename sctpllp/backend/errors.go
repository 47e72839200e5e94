package backend

import (
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/llp"
)

// The errors of the Transport contract. Every backend returns them,
// wrapped with detail; test with errors.Is.
var (
	// ErrStreamRange reports a stream identifier outside the association's
	// stream count (RFC 5043 §8; RFC 9260 §6.5, the "Invalid Stream
	// Identifier" error cause, with which a peer reports having dropped
	// data sent on such a stream).
	ErrStreamRange = errors.New("sctpllp: stream identifier out of range")
	// ErrStreamInUse reports a stream identifier that is not available: to
	// the adaptation, Open on a stream that carries a session, is
	// quarantined after one (RFC 5043 §6.6) or is labelled erroneous; to a
	// backend, WriteMsg on a stream whose reset (RFC 6525) is in progress.
	ErrStreamInUse = errors.New("sctpllp: stream identifier not available")
	// ErrAssociationClosed reports use of an association that has ended
	// (closed or aborted by either side). It wraps llp.ErrClosed. Every
	// Transport returns it, wrapped with detail, from WriteMsg and
	// ResetStream once the association is gone.
	ErrAssociationClosed = fmt.Errorf("sctpllp: association closed: %w", llp.ErrClosed)
	// ErrEmptyMessage reports a WriteMsg with no octets: an SCTP user
	// message cannot be empty (RFC 9260 §6.2: "no user data" is an error,
	// DATA chunks carry at least one octet).
	ErrEmptyMessage = errors.New("sctpllp: empty SCTP user message")
	// ErrPeerUnresponsive reports that nothing was received from the peer
	// for the backend's dead-peer time, heartbeats included: the
	// association was aborted as failed (Association.Max.Retrans and path
	// heartbeats, RFC 9260 §8.1, §8.3). It comes wrapped in llp.ErrAborted
	// in done's cause.
	ErrPeerUnresponsive = errors.New("sctpllp: peer unresponsive")
	// ErrAdaptationMismatch reports an association whose peer did not send
	// the DDP Adaptation Layer Indication (AdaptationIndicationDDP) in its
	// INIT or INIT ACK (RFC 5043 §5.1, §11.1). Every backend requires it
	// unless its config's AllowMissingAdaptation is set: Dial fails with
	// it, and a listener aborts such an association and keeps accepting.
	ErrAdaptationMismatch = errors.New("sctpllp: peer did not indicate the DDP adaptation layer (RFC 5043 §5.1)")
)
