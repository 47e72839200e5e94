package wire

import "encoding/binary"

// Result codes of a Re-configuration Response Parameter (RFC 6525 §4.4).
const (
	ReconfigSuccessNothing    uint32 = 0
	ReconfigSuccessPerformed  uint32 = 1
	ReconfigDenied            uint32 = 2
	ReconfigErrorWrongSSN     uint32 = 3
	ReconfigErrorInProgress   uint32 = 4
	ReconfigErrorBadSeqNumber uint32 = 5
	ReconfigInProgress        uint32 = 6
)

// ReconfigRequest is one request parameter of a RE-CONFIG chunk (RFC 6525
// §3.1, §4.1-§4.6): its type, its Re-configuration Request Sequence
// Number, and the rest of its value (aliasing the packet).
type ReconfigRequest struct {
	Type   ParamType
	SeqNum uint32
	Rest   []byte
}

// ReconfigResponse is a Re-configuration Response Parameter (RFC 6525
// §4.4) without the optional TSN fields.
type ReconfigResponse struct {
	SeqNum uint32
	Result uint32
}

// reconfigResponseLen is the value of a Re-configuration Response without
// its optional Sender's and Receiver's Next TSN.
const reconfigResponseLen = 8

// ParseReconfig reads the parameters of a RE-CONFIG chunk (RFC 6525 §3.1:
// one or two). Each request parameter is passed to req and each response
// to resp; a parameter too short for its sequence number, or a malformed
// one, is ErrParamLength.
func ParseReconfig(c Chunk, req func(ReconfigRequest), resp func(ReconfigResponse)) error {
	if err := checkType(c, ChunkReconfig); err != nil {
		return err
	}
	it := NewParamIter(c.Value)
	for p, ok := it.Next(); ok; p, ok = it.Next() {
		if len(p.Value) < 4 {
			return ErrParamLength
		}
		seq := binary.BigEndian.Uint32(p.Value)
		if p.Type == ParamReconfigResponse {
			if len(p.Value) < reconfigResponseLen {
				return ErrParamLength
			}
			if resp != nil {
				resp(ReconfigResponse{SeqNum: seq, Result: binary.BigEndian.Uint32(p.Value[4:])})
			}
			continue
		}
		if req != nil {
			req(ReconfigRequest{Type: p.Type, SeqNum: seq, Rest: p.Value[4:]})
		}
	}
	return it.Err()
}

// AppendReconfigResponses appends a RE-CONFIG chunk carrying the given
// responses (RFC 6525 §3.1 allows at most two parameters per chunk).
func AppendReconfigResponses(b []byte, rs ...ReconfigResponse) []byte {
	start := len(b)
	b = appendChunkHeader(b, ChunkReconfig, 0, ChunkHeaderLen)
	for _, r := range rs {
		b = appendTLVHeader(b, uint16(ParamReconfigResponse), reconfigResponseLen)
		b = binary.BigEndian.AppendUint32(b, r.SeqNum)
		b = binary.BigEndian.AppendUint32(b, r.Result)
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return b
}

// OutgoingSSNReset reads an Outgoing SSN Reset Request (RFC 6525 §4.1):
// the Sender's Last Assigned TSN and its Stream Numbers, two octets each
// (aliasing the packet; none: every stream). It fails for another request
// type or a value that does not hold the fixed fields or whole numbers.
func (r ReconfigRequest) OutgoingSSNReset() (lastTSN uint32, streams []byte, err error) {
	if r.Type != ParamOutgoingSSNReset || len(r.Rest) < 8 || (len(r.Rest)-8)%2 != 0 {
		return 0, nil, ErrParamLength
	}
	return binary.BigEndian.Uint32(r.Rest[4:]), r.Rest[8:], nil
}

// IncomingSSNReset reads an Incoming SSN Reset Request (RFC 6525 §4.2):
// its Stream Numbers, two octets each (aliasing the packet; none: every
// stream).
func (r ReconfigRequest) IncomingSSNReset() (streams []byte, err error) {
	if r.Type != ParamIncomingSSNReset || len(r.Rest)%2 != 0 {
		return nil, ErrParamLength
	}
	return r.Rest, nil
}

// AppendOutgoingSSNReset appends a RE-CONFIG chunk with one Outgoing SSN
// Reset Request (RFC 6525 §4.1): request and response sequence numbers,
// the Sender's Last Assigned TSN and the stream numbers, two octets each
// (none: every stream; at most 65,516 octets of them).
func AppendOutgoingSSNReset(b []byte, seq, respSeq, lastTSN uint32, streams []byte) []byte {
	streams = streams[:min(len(streams), maxTLVValue-ChunkHeaderLen-16)&^1]
	start := len(b)
	b = appendChunkHeader(b, ChunkReconfig, 0, ChunkHeaderLen)
	b = appendTLVHeader(b, uint16(ParamOutgoingSSNReset), 12+len(streams))
	b = binary.BigEndian.AppendUint32(b, seq)
	b = binary.BigEndian.AppendUint32(b, respSeq)
	b = binary.BigEndian.AppendUint32(b, lastTSN)
	b = append(b, streams...)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return pad(b)
}
