package ddp

import (
	"errors"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// The DDP Error Types and Codes of RFC 5041 §7.2 are rows of the one
// Terminate table of package iwarp (iwarp.Term.DDPInvalidSTag, ...,
// iwarpwire.DDPCodeName, iwarpwire.ValidDDPCode); the RDMAP layer carries them in a
// Terminate with Layer iwarp.LayerDDP (RFC 5040 §4.8).

// asError returns the first *iwarpwire.DDPError in err's chain, if any.
func asError(err error) (*iwarpwire.DDPError, bool) {
	var e *iwarpwire.DDPError
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Prototype errors, one per row of RFC 5041 §7.2 (the iwarp.Term.DDP* rows),
// for errors.Is. They carry no cause; do not modify them.
var (
	errLocalCatastrophic = iwarpwire.NewDDPError(iwarp.Term.DDPLocalCatastrophic, nil)
	errInvalidSTag       = iwarpwire.NewDDPError(iwarp.Term.DDPInvalidSTag, nil)
	errBaseBounds        = iwarpwire.NewDDPError(iwarp.Term.DDPBaseBounds, nil)
	errSTagNotAssociated = iwarpwire.NewDDPError(iwarp.Term.DDPSTagNotAssociated, nil)
	errTOWrap            = iwarpwire.NewDDPError(iwarp.Term.DDPTOWrap, nil)
	errTaggedVersion     = iwarpwire.NewDDPError(iwarp.Term.DDPTaggedVersion, nil)
	errInvalidQN         = iwarpwire.NewDDPError(iwarp.Term.DDPInvalidQN, nil)
	errNoBuffer          = iwarpwire.NewDDPError(iwarp.Term.DDPNoBuffer, nil)
	errMSNRange          = iwarpwire.NewDDPError(iwarp.Term.DDPMSNRange, nil)
	errInvalidMO         = iwarpwire.NewDDPError(iwarp.Term.DDPInvalidMO, nil)
	errMessageTooLong    = iwarpwire.NewDDPError(iwarp.Term.DDPMessageTooLong, nil)
	errUntaggedVersion   = iwarpwire.NewDDPError(iwarp.Term.DDPUntaggedVersion, nil)
)

// Causes wrapped inside *iwarpwire.DDPError values (and returned by the local API), for
// errors.Is.
var (
	// errSTagChanged: a segment of a tagged message in progress names a
	// different STag (RFC 5041 §4.2: every segment of a message carries the
	// same STag), reported as CodeInvalidSTag.
	errSTagChanged = errors.New("ddp: STag changed within a tagged message")
	// errOverlap: a segment would place octets of an untagged message that
	// an earlier segment already placed, reported as CodeInvalidMO.
	errOverlap = errors.New("ddp: segment overlaps octets already placed")
	// errHole: the last segment (L=1) of an untagged message arrived while
	// octets below its MO were never placed, reported as CodeInvalidMO.
	errHole = errors.New("ddp: message has unplaced octets at its last segment")
	// errBeyondLast: octets placed beyond the end given by the last
	// segment (RFC 5041 §4.1: the L segment carries the highest MO),
	// reported as CodeInvalidMO.
	errBeyondLast = errors.New("ddp: octets placed beyond the last segment's end")
	// errIncomplete: a new message began on a queue whose previous message
	// never received its last segment, reported as CodeMSNRange.
	errIncomplete = errors.New("ddp: previous message on this queue incomplete")
	// errTargetLength: ULP.TaggedTarget returned a slice of the wrong
	// length, reported as TypeLocalCatastrophic.
	errTargetLength = errors.New("ddp: ULP placement target has the wrong length")

	// errMessageTooLarge: SendTagged/SendUntagged given more than
	// MaxMessageLen octets.
	errMessageTooLarge = errors.New("ddp: message longer than 2^32-1 octets")
	// errMULPDUTooSmall: the LLP's MULPDU cannot carry a DDP header plus one
	// octet of payload.
	errMULPDUTooSmall = errors.New("ddp: MULPDU too small for a DDP header and one octet")
	// errTOWrapSend: SendTagged's TO plus length wraps 64 bits (RFC 5041
	// §7.1 tagged check 5 would reject it at the Data Sink).
	errTOWrapSend = errors.New("ddp: TO plus message length wraps 64 bits")

	// errStopped: PostUntagged after the Receiver failed, was drained, or
	// its LLP stream closed. The wrapping error says which.
	errStopped = errors.New("ddp: receiver stopped")
	// errBadQueue: PostUntagged or Posted for a QN the Receiver does not
	// have.
	errBadQueue = errors.New("ddp: no such queue number")
	// errCreditQueue: PostUntagged on a queue of the Receiver's own
	// buffers, or PostCredits on a queue of the ULP's, or with another size
	// (Receiver.PostCredits).
	errCreditQueue = errors.New("ddp: queue mixes posted buffers and credits")
	// errQueueFull: PostUntagged with 2^31 buffers already waiting on the
	// queue (the MSN space would become ambiguous, RFC 5041 §4.3).
	errQueueFull = errors.New("ddp: too many buffers posted on queue")
)
