package ddp

import (
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"math"

	"github.com/sctp-rdma/sctp-rdma/llp"
)

// maxMessageLen is the largest DDP message: the untagged MO is 32 bits
// (RFC 5041 §4.3), and this implementation applies the same limit to tagged
// messages.
const maxMessageLen = math.MaxUint32

// Sender is the Data Source side of one DDP Stream (RFC 5041 §5.2, §5.3): it
// segments ULP messages to the LLP's MULPDU and writes the DDP headers.
//
// A Sender is not safe for concurrent use; the ULP (RDMAP) serialises its
// calls, which also makes messages go out in submission order (RFC 5041
// §5.3). Headers are built in a scratch array owned by the Sender and passed
// to llp.Stream.SendSegment separately from the payload (gather), so sending
// allocates nothing per segment.
type Sender struct {
	llp llp.Stream
	// more is the LLP's llp.Batcher, if it is one: every segment of a
	// message but the last goes through it, so that the LLP may send the
	// message's segments together.
	more llp.Batcher
	// floor is the LLP's llp.Floored floor (0: none): a segment of at
	// most floor octets is sent without asking MULPDU.
	floor int32
	// even is the LLP's WireSize, if it has one (evenCut).
	even wireSizer
	hdr  [iwarpwire.DDPUntaggedHeaderLen]byte
	// lastMSN holds, per QN below 4 (RDMAP's), the MSN of the last
	// message started on it, and moreMSN those of higher QNs (made on
	// their first use); 0 or a missing entry means none yet, so the first
	// MSN is 1 (RFC 5041 §4.3).
	lastMSN [4]uint32
	moreMSN map[uint32]uint32
}

// NewSender returns a Sender that transmits on s.
func NewSender(s llp.Stream) *Sender {
	more, _ := s.(llp.Batcher)
	var floor int32
	if f, ok := s.(llp.Floored); ok {
		floor = int32(min(max(f.MULPDUFloor(), 0), math.MaxInt32))
	}
	even, _ := s.(wireSizer)
	return &Sender{llp: s, more: more, floor: floor, even: even}
}

// segment returns the first segment's payload of what is left of a
// message, payload, after a header of hdrLen octets: all of it if that
// fits in the LLP's floor, else as much as the MULPDU allows now or, in a
// message cut evenly (evenCut), its share of the fewest segments the
// MULPDU allows: the segments then differ by at most one octet.
func (s *Sender) segment(hdrLen int, payload []byte, even bool) ([]byte, error) {
	if hdrLen+len(payload) <= int(s.floor) {
		return payload, nil
	}
	room, err := s.room(hdrLen)
	if err != nil {
		return nil, err
	}
	if len(payload) > room {
		k := room
		if even {
			n := (len(payload) + room - 1) / room
			k = (len(payload) + n - 1) / n
		}
		payload = payload[:k]
	}
	return payload, nil
}

// wireSizer is a Stream's optional WireSize (package llp: the octets a
// segment of n octets takes in its packet; 0: sizes do not matter).
type wireSizer interface{ WireSize(n int) int }

// evenCut reports whether a message of total payload octets after
// headers of hdrLen octets is cut evenly: where the LLP has WireSize and the message's share sizes, q and q+1 octets in the fewest segments
// the MULPDU allows now, take one wire size, so that all its packets but
// none of the next message's break a run. Elsewhere the message is cut
// at the MULPDU, as before. RFC 5041 §5.2 only bounds a segment by the
// MULPDU.
func (s *Sender) evenCut(hdrLen, total int) bool {
	if s.even == nil || hdrLen+total <= int(s.floor) {
		return false
	}
	room, err := s.room(hdrLen)
	if err != nil || total <= room {
		return false
	}
	n := (total + room - 1) / room
	q := total / n
	w := s.even.WireSize(hdrLen + q)
	return w > 0 && (total%n == 0 || w == s.even.WireSize(hdrLen+q+1))
}

// send hands one segment to the LLP: through llp.Batcher when more
// segments of the message follow and the LLP batches.
func (s *Sender) send(hdr, payload []byte, last bool) error {
	if !last && s.more != nil {
		return s.more.SendSegmentMore(hdr, payload)
	}
	return s.llp.SendSegment(hdr, payload)
}

// NextMSN returns the MSN the next SendUntagged on qn will use: 1 for a
// fresh queue, then increasing by one and wrapping from 0xFFFFFFFF to 0
// (RFC 5041 §4.3).
func (s *Sender) nextMSN(qn uint32) uint32 {
	if qn < uint32(len(s.lastMSN)) {
		return s.lastMSN[qn] + 1
	}
	return s.moreMSN[qn] + 1
}

// setLastMSN records msn as the last MSN started on qn.
func (s *Sender) setLastMSN(qn, msn uint32) {
	if qn < uint32(len(s.lastMSN)) {
		s.lastMSN[qn] = msn
		return
	}
	if s.moreMSN == nil {
		s.moreMSN = make(map[uint32]uint32)
	}
	s.moreMSN[qn] = msn
}

// room returns the payload octets the next segment can carry after a header
// of hdrLen octets, asking the LLP again (RFC 5041 §3 requirement 1: the
// MULPDU can change between any two segments).
func (s *Sender) room(hdrLen int) (int, error) {
	m := s.llp.MULPDU()
	if m < hdrLen+1 {
		return 0, fmt.Errorf("ddp: send: MULPDU %d, header %d: %w", m, hdrLen, errMULPDUTooSmall)
	}
	return m - hdrLen, nil
}

// SendTagged sends payload as one tagged DDP message (RFC 5041 §4.2,
// §5.2) into the Data Sink's buffer stag starting at tagged offset to, with
// rsvdULP (the RDMAP control octet) in every segment.
func (s *Sender) SendTagged(rsvdULP uint8, stag uint32, to uint64, payload []byte) error {
	// The message is cut into segments of at most MULPDU octets, MULPDU being
	// asked of the LLP before every segment (evenly where evenCut says so);
	// the TO advances by each segment's
	// payload; only the last segment has L set (RFC 5041 §4.1). A zero-length
	// message is one segment with L set. It fails before sending anything if the
	// payload is longer than MaxMessageLen (ErrMessageTooLarge), if to+len(payload)
	// wraps 64 bits (ErrTOWrapSend, RFC 5041 §7.1 tagged check 5), or if the
	// MULPDU cannot carry a header and one octet (ErrMULPDUTooSmall). An error
	// after the first segment was accepted (the LLP failed, or the MULPDU shrank
	// below the minimum) leaves a partial message at the peer, which will never
	// deliver it; the ULP must then tear the stream down.
	n := uint64(len(payload))
	if n > maxMessageLen {
		return fmt.Errorf("ddp: send tagged: %d octets: %w", n, errMessageTooLarge)
	}
	if to > math.MaxUint64-n {
		return fmt.Errorf("ddp: send tagged: TO %#x + %d: %w", to, n, errTOWrapSend)
	}
	h := iwarpwire.DDPTaggedHeader{RsvdULP: rsvdULP, STag: stag, TO: to}
	even := s.evenCut(iwarpwire.DDPTaggedHeaderLen, len(payload))
	for {
		chunk, err := s.segment(iwarpwire.DDPTaggedHeaderLen, payload, even)
		if err != nil {
			return err
		}
		h.Last = len(chunk) == len(payload)
		hdr := h.Append(s.hdr[:0])
		if err := s.send(hdr, chunk, h.Last); err != nil {
			return fmt.Errorf("ddp: send tagged segment STag %#x TO %#x: %w", stag, h.TO, err)
		}
		if h.Last {
			return nil
		}
		payload = payload[len(chunk):]
		h.TO += uint64(len(chunk))
	}
}

// SendUntagged sends payload as one untagged DDP message (RFC 5041 §4.3,
// §5.2) to queue qn and returns the MSN it used. rsvdULP goes into every
// segment (RDMAP: control octet, then the Invalidate STag).
func (s *Sender) SendUntagged(rsvdULP [5]byte, qn uint32, payload []byte) (msn uint32, err error) {
	// MSNs are counted per QN starting at 1 and wrap after 0xFFFFFFFF
	// (RFC 5041 §4.3); the MO starts at 0 and advances by each segment's
	// payload; only the last segment has L set. Segmentation and errors are as
	// for SendTagged (without the TO check). The MSN is consumed only once the
	// LLP has accepted the first segment: after a failure before that the
	// returned MSN is 0 and NextMSN(qn) is unchanged; after a failure later the
	// returned MSN is the partial message's.
	return s.sendUntagged(rsvdULP, qn, payload, false)
}

// SendUntaggedMore is SendUntagged for a message that more messages
// follow at once: where the LLP batches (llp.Batcher), its last segment
// may be held as well, and leaves with the next message's last segment or
// at Flush, whichever comes first. payload must stay unchanged until then.
// Where the LLP does not batch it is SendUntagged.
func (s *Sender) SendUntaggedMore(rsvdULP [5]byte, qn uint32, payload []byte) (msn uint32, err error) {
	return s.sendUntagged(rsvdULP, qn, payload, s.more != nil)
}

// Flush hands the LLP what SendUntaggedMore left held (llp.Batcher.Flush);
// nothing to do where the LLP does not batch.
func (s *Sender) Flush() error {
	if s.more == nil {
		return nil
	}
	return s.more.Flush()
}

func (s *Sender) sendUntagged(rsvdULP [5]byte, qn uint32, payload []byte, hold bool) (msn uint32, err error) {
	if n := uint64(len(payload)); n > maxMessageLen {
		return 0, fmt.Errorf("ddp: send untagged: %d octets: %w", n, errMessageTooLarge)
	}
	h := iwarpwire.DDPUntaggedHeader{RsvdULP: rsvdULP, QN: qn, MSN: s.nextMSN(qn)}
	started := false
	even := s.evenCut(iwarpwire.DDPUntaggedHeaderLen, len(payload))
	for {
		chunk, err := s.segment(iwarpwire.DDPUntaggedHeaderLen, payload, even)
		if err != nil {
			return s.sentMSN(started, h.MSN), err
		}
		h.Last = len(chunk) == len(payload)
		hdr := h.Append(s.hdr[:0])
		if err := s.send(hdr, chunk, h.Last && !hold); err != nil {
			return s.sentMSN(started, h.MSN), fmt.Errorf("ddp: send untagged segment QN %d MSN %d MO %d: %w", qn, h.MSN, h.MO, err)
		}
		if !started {
			started = true
			s.setLastMSN(qn, h.MSN)
		}
		if h.Last {
			return h.MSN, nil
		}
		payload = payload[len(chunk):]
		h.MO += uint32(len(chunk))
	}
}

// sentMSN is the MSN SendUntagged reports with an error: the message's MSN
// if part of it reached the LLP, 0 otherwise.
func (s *Sender) sentMSN(started bool, msn uint32) uint32 {
	if started {
		return msn
	}
	return 0
}
