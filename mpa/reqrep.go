package mpa

import (
	"encoding/binary"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// Startup frame constants (RFC 5044 §7.1.1, RFC 6581 §6).
const (
	// maxPrivateData is the largest Private Data field RFC 5044 §7.1.1
	// allows (including, for an enhanced frame, the 4-octet IRD/ORD data).
	maxPrivateData = 512
)

// The Keys of RFC 5044 §7.1.1, in byte order.
const (
	// requestKey is sent by the Initiator: 4D 50 41 20 49 44 20 52 65 71 20
	// 46 72 61 6D 65.
	requestKey = "MPA ID Req Frame"
	// replyKey is sent by the Responder: 4D 50 41 20 49 44 20 52 65 70 20 46
	// 72 61 6D 65.
	replyKey = "MPA ID Rep Frame"
)

// Flag bits of octet 16 (RFC 5044 §7.1.1 Figure 8, RFC 6581 §6).
const (
	flagM = 0x80 // Markers required in FPDUs sent to the frame's sender
	flagC = 0x40 // CRC preferred
	flagR = 0x20 // Rejected connection (Reply only)
	flagS = 0x10 // enhanced connection establishment data present (Rev >= 2)
)

// Frame is an MPA Request Frame or MPA Reply Frame (RFC 5044 §7.1.1 Figure
// 8, enhanced by RFC 6581 §6), drawn at the top of the struct.
type Frame struct {
	//	0                   1                   2                   3
	//	0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//	|         Key (16 bytes "MPA ID Req Frame" / "MPA ID Rep Frame") |
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//	|M|C|R|S| Res   |     Rev       |          PD_Length            |
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//	~   Private Data ([IRD/ORD word if S] then ULP private data)    ~
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

	// Reply selects the Key: false "MPA ID Req Frame", true "MPA ID Rep
	// Frame".
	Reply bool
	// Markers is M: the frame's sender requires Markers in the FPDUs the
	// other end sends to it (RFC 5044 §7.1.1).
	Markers bool
	// CRC is C: the sender's preference for CRCs; CRCs are used in both
	// directions if either frame has it (RFC 5044 §7.1.1, §4.4).
	CRC bool
	// Reject is R, the Rejected Connection bit of a Reply. In a Request it
	// is sent as 0 and not checked on reception (RFC 5044 §7.1.1), so Parse
	// leaves it false for a Request and Append ignores it.
	Reject bool
	// Enhanced is S (RFC 6581 §6): the Private Data begins with the IRD/ORD
	// data. S lies in RFC 5044's Res field, which a Rev 1 receiver does not
	// check, so Parse reports Enhanced only for Rev >= 2.
	Enhanced bool
	// Rev is the MPA revision (1: RFC 5044, 2: RFC 6581).
	Rev uint8
	// IRDORD is the enhanced connection establishment data, meaningful when
	// Enhanced.
	IRDORD iwarp.IRDORD
	// PrivateData is the ULP's private data: the Private Data field after
	// the IRD/ORD data if Enhanced, the whole field otherwise. Parse
	// returns a sub-slice of its input.
	PrivateData []byte
}

// pdLen returns the PD_Length field value of f.
func (f *Frame) pdLen() int {
	n := len(f.PrivateData)
	if f.Enhanced {
		n += iwarpwire.IRDORDLen
	}
	return n
}

// Len returns the length of f on the wire.
func (f *Frame) len() int { return iwarpwire.MPAFrameHeaderLen + f.pdLen() }

// Validate checks what Append cannot express or what the RFCs forbid a
// sender: Private Data over 512 octets (RFC 5044 §7.1.1), revision 0 or
// S = 1 below revision 2 (RFC 6581 §6).
func (f *Frame) validate() error {
	if f.pdLen() > maxPrivateData {
		return fmt.Errorf("%w: %d octets of private data exceed %d", errPrivateDataLength, f.pdLen(), maxPrivateData)
	}
	if f.Rev == 0 {
		return fmt.Errorf("%w: revision 0 (RDMA Consortium MPA) is not supported", errRevision)
	}
	if f.Enhanced && f.Rev < iwarpwire.MPARev2 {
		return fmt.Errorf("%w: S needs revision 2 or higher, have %d", errRevision, f.Rev)
	}
	return nil
}

// Append appends the wire form of f to b; Res is sent as zero (RFC 5044
// §7.1.1). PD_Length is the low 16 bits of the length: call Validate first
// for frames built from untrusted sizes. It allocates nothing when b has
// room for f.Len() more octets.
func (f *Frame) Append(b []byte) []byte {
	if f.Reply {
		b = append(b, replyKey...)
	} else {
		b = append(b, requestKey...)
	}
	var flags byte
	if f.Markers {
		flags |= flagM
	}
	if f.CRC {
		flags |= flagC
	}
	if f.Reject && f.Reply {
		flags |= flagR
	}
	if f.Enhanced {
		flags |= flagS
	}
	b = append(b, flags, f.Rev)
	b = binary.BigEndian.AppendUint16(b, uint16(f.pdLen()))
	if f.Enhanced {
		b = iwarpwire.AppendIRDORD(b, f.IRDORD)
	}
	return append(b, f.PrivateData...)
}

// FrameLen returns the total length of the startup frame whose first
// iwarpwire.MPAFrameHeaderLen octets are in b, validating the Key and PD_Length the way
// ParseFrame does. It lets a stream reader learn how much to read.
func FrameLen(b []byte) (int, error) {
	if len(b) < iwarpwire.MPAFrameHeaderLen {
		return 0, errTruncated
	}
	if _, err := parseKey(b); err != nil {
		return 0, err
	}
	pd := int(binary.BigEndian.Uint16(b[18:]))
	if pd > maxPrivateData {
		return 0, frameError(errPrivateDataLength, "PD_Length %d exceeds %d (RFC 5044 §7.1.1)", pd, maxPrivateData)
	}
	return iwarpwire.MPAFrameHeaderLen + pd, nil
}

func parseKey(b []byte) (reply bool, err error) {
	switch string(b[:16]) {
	case requestKey:
		return false, nil
	case replyKey:
		return true, nil
	}
	return false, frameError(errBadKey, "key % x (RFC 5044 §7.1.1)", b[:16])
}

// ParseFrame parses an MPA Request or Reply Frame at the start of b. It
// returns the frame, the octets consumed, and an error: ErrTruncated when b
// holds less than the whole frame, otherwise an *llp.Error with code
// iwarp.Term.MPAInvalidFrame.Code wrapping ErrBadKey (a Key that is neither Request nor
// Reply, RFC 5044 §7.1.2 rule 5) or ErrPrivateDataLength (PD_Length over
// 512, RFC 5044 §7.1.1; an enhanced frame shorter than its IRD/ORD data,
// RFC 6581 §6). Res bits are not checked (RFC 5044 §7.1.1). Revision
// acceptance is left to the caller, which knows which revisions it speaks.
// PrivateData aliases b.
func ParseFrame(b []byte) (Frame, int, error) {
	n, err := FrameLen(b)
	if err != nil {
		return Frame{}, 0, err
	}
	if len(b) < n {
		return Frame{}, 0, errTruncated
	}
	reply, _ := parseKey(b)
	flags, rev := b[16], b[17]
	f := Frame{
		Reply:   reply,
		Markers: flags&flagM != 0,
		CRC:     flags&flagC != 0,
		Reject:  reply && flags&flagR != 0,
		// RFC 6581 §6: S is defined from revision 2 on; below it, the bit
		// is Res, which RFC 5044 §7.1.1 says is not checked on reception.
		Enhanced: flags&flagS != 0 && rev >= iwarpwire.MPARev2,
		Rev:      rev,
	}
	pd := b[iwarpwire.MPAFrameHeaderLen:n:n]
	if f.Enhanced {
		v, m, err := iwarpwire.ParseIRDORD(pd)
		if err != nil {
			return Frame{}, 0, frameError(errPrivateDataLength, "S set but PD_Length %d < %d (RFC 6581 §6)", len(pd), iwarpwire.IRDORDLen)
		}
		f.IRDORD = v
		pd = pd[m:]
	}
	if len(pd) > 0 {
		f.PrivateData = pd
	}
	return f, n, nil
}
