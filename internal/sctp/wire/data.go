package wire

import "encoding/binary"

// The flags of a DATA chunk (RFC 9260 §3.3.1).
const (
	DataFlagEnding    uint8 = 1 << 0 // E: last fragment of a user message
	DataFlagBeginning uint8 = 1 << 1 // B: first fragment of a user message
	DataFlagUnordered uint8 = 1 << 2 // U: unordered; the SSN is ignored
	DataFlagImmediate uint8 = 1 << 3 // I: the receiver SACKs at once (§6.2)
)

// DataHeaderLen is the length of a DATA chunk without its user data: the
// chunk header, TSN, Stream Identifier, Stream Sequence Number and Payload
// Protocol Identifier (RFC 9260 §3.3.1).
const DataHeaderLen = 16

// MaxUserData is the most user data one DATA chunk can carry.
const MaxUserData = MaxChunkLen - DataHeaderLen

// Data is a DATA chunk (RFC 9260 §3.3.1). Parsed, UserData aliases the
// packet.
type Data struct {
	// Immediate is the I bit: the sender asks for a SACK without delay.
	Immediate bool
	// Unordered is the U bit: delivered without regard to SSN. RFC 5043
	// §10: every DDP segment is sent unordered.
	Unordered bool
	// Beginning and Ending are the B and E bits: the first and the last
	// fragment of a user message; both set for an unfragmented one.
	Beginning, Ending bool
	// TSN is the Transmission Sequence Number.
	TSN uint32
	// StreamID is the Stream Identifier S.
	StreamID uint16
	// SSN is the Stream Sequence Number n, the same for every fragment of
	// a message.
	SSN uint16
	// PPID is the Payload Protocol Identifier (RFC 5043 §5.2: 16 for a
	// DDP segment, 17 for DDP session control), in host order here.
	PPID uint32
	// UserData is the payload, at most MaxUserData octets.
	UserData []byte
}

// Flags returns the chunk flags of d.
func (d *Data) Flags() uint8 {
	var f uint8
	if d.Ending {
		f |= DataFlagEnding
	}
	if d.Beginning {
		f |= DataFlagBeginning
	}
	if d.Unordered {
		f |= DataFlagUnordered
	}
	if d.Immediate {
		f |= DataFlagImmediate
	}
	return f
}

// ParseData decodes a DATA chunk. A chunk of exactly 16 octets has no user
// data: ParseData returns its fields with ErrNoUserData, for the ABORT
// with a No User Data cause naming its TSN (RFC 9260 §3.3.1,
// §3.3.10.9). Shorter is ErrChunkLength.
func ParseData(c Chunk) (Data, error) {
	if err := checkType(c, ChunkData); err != nil {
		return Data{}, err
	}
	v := c.Value
	if len(v) < DataHeaderLen-ChunkHeaderLen {
		return Data{}, ErrChunkLength
	}
	d := Data{
		Immediate: c.Flags&DataFlagImmediate != 0,
		Unordered: c.Flags&DataFlagUnordered != 0,
		Beginning: c.Flags&DataFlagBeginning != 0,
		Ending:    c.Flags&DataFlagEnding != 0,
		TSN:       binary.BigEndian.Uint32(v),
		StreamID:  binary.BigEndian.Uint16(v[4:]),
		SSN:       binary.BigEndian.Uint16(v[6:]),
		PPID:      binary.BigEndian.Uint32(v[8:]),
		UserData:  v[12:],
	}
	if len(d.UserData) == 0 {
		return d, ErrNoUserData
	}
	return d, nil
}

// Len returns the octets Append writes: the chunk and its padding.
func (d *Data) Len() int { return padded(DataHeaderLen + len(d.UserData)) }

// Append appends the DATA chunk, padded. It panics if UserData is longer
// than MaxUserData.
func (d *Data) Append(b []byte) []byte {
	b = d.AppendHeader(b, len(d.UserData))
	return pad(append(b, d.UserData...))
}

// AppendHeader appends the chunk header and the fixed fields of a DATA
// chunk whose user data, n octets, the caller appends next (from several
// pieces if it likes), followed by Pad. d.UserData is not used. It panics
// if n is beyond MaxUserData.
func (d *Data) AppendHeader(b []byte, n int) []byte {
	if n < 0 {
		n = MaxChunkLen // a caller's mistake: panic below
	}
	b = appendChunkHeader(b, ChunkData, d.Flags(), DataHeaderLen+n)
	b = binary.BigEndian.AppendUint32(b, d.TSN)
	b = binary.BigEndian.AppendUint16(b, d.StreamID)
	b = binary.BigEndian.AppendUint16(b, d.SSN)
	return binary.BigEndian.AppendUint32(b, d.PPID)
}
