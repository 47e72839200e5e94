package wire

import "encoding/binary"

// InitHeaderLen is the length of an INIT or INIT ACK chunk without its
// variable-length parameters (RFC 9260 §3.3.2, §3.3.3).
const InitHeaderLen = 20

// MinARwnd is the smallest a_rwnd an INIT or INIT ACK may advertise (RFC
// 9260 §3.3.2, §3.3.3).
const MinARwnd = 1500

// Init is an INIT chunk (RFC 9260 §3.3.2) or, with Ack set, an INIT ACK
// chunk (§3.3.3): the same fixed fields, and parameters.
type Init struct {
	// Ack selects INIT ACK.
	Ack bool
	// InitiateTag is the Verification Tag the sender expects in every
	// packet it receives on the association; never 0.
	InitiateTag uint32
	// ARwnd is the Advertised Receiver Window Credit, at least MinARwnd.
	ARwnd uint32
	// OutboundStreams (OS) and InboundStreams (MIS) bound the streams;
	// neither is 0. RFC 5043 §8 wants them equal for DDP.
	OutboundStreams, InboundStreams uint16
	// InitialTSN is the first TSN the sender will use.
	InitialTSN uint32
	// Params are the optional and variable-length parameters.
	Params InitParams
}

func (i *Init) chunkType() ChunkType {
	if i.Ack {
		return ChunkInitAck
	}
	return ChunkInit
}

// ParseInit decodes an INIT or INIT ACK chunk, its parameters included
// (see InitParams for how unrecognized ones are handled). Beyond framing
// errors, it checks the rules of RFC 9260 §3.3.2 and §3.3.3 that decide
// whether the chunk is usable, in this order, returning the decoded chunk
// with the error so that the caller can answer:
func ParseInit(c Chunk) (Init, error) {
	//   - ErrZeroInitiateTag: an INIT is discarded silently, an INIT ACK
	//     destroys the association being set up;
	//   - ErrZeroStreams, ErrSmallARwnd: the packet is discarded (an INIT ACK
	//     with no streams also ends the association being set up) and an
	//     ABORT SHOULD be sent;
	//   - ErrMissingStateCookie: an INIT ACK without a State Cookie, reported
	//     as a Missing Mandatory Parameter (§3.3.10.2).

	if c.Type != ChunkInit && c.Type != ChunkInitAck {
		return Init{}, ErrChunkType
	}
	v := c.Value
	if len(v) < InitHeaderLen-ChunkHeaderLen {
		return Init{}, ErrChunkLength
	}
	i := Init{
		Ack:             c.Type == ChunkInitAck,
		InitiateTag:     binary.BigEndian.Uint32(v),
		ARwnd:           binary.BigEndian.Uint32(v[4:]),
		OutboundStreams: binary.BigEndian.Uint16(v[8:]),
		InboundStreams:  binary.BigEndian.Uint16(v[10:]),
		InitialTSN:      binary.BigEndian.Uint32(v[12:]),
	}
	if err := i.Params.decode(v[16:]); err != nil {
		return Init{}, err
	}
	switch {
	case i.InitiateTag == 0:
		return i, ErrZeroInitiateTag
	case i.OutboundStreams == 0 || i.InboundStreams == 0:
		return i, ErrZeroStreams
	case i.ARwnd < MinARwnd:
		return i, ErrSmallARwnd
	case i.Ack && i.Params.StateCookie == nil:
		return i, ErrMissingStateCookie
	}
	return i, nil
}

// Len returns the octets Append writes, padding included.
func (i *Init) Len() int { return InitHeaderLen + i.Params.len() }

// Append appends the INIT or INIT ACK chunk, padded. It panics if the
// parameters do not fit a chunk.
func (i *Init) Append(b []byte) []byte {
	start := len(b)
	b = BeginChunk(b, i.chunkType(), 0)
	b = binary.BigEndian.AppendUint32(b, i.InitiateTag)
	b = binary.BigEndian.AppendUint32(b, i.ARwnd)
	b = binary.BigEndian.AppendUint16(b, i.OutboundStreams)
	b = binary.BigEndian.AppendUint16(b, i.InboundStreams)
	b = binary.BigEndian.AppendUint32(b, i.InitialTSN)
	b = i.Params.append(b)
	b, err := EndChunk(b, start)
	if err != nil {
		panic("internal/sctp/wire: " + i.chunkType().String() + " chunk longer than 65535 octets")
	}
	return b
}
