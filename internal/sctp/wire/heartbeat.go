package wire

// Heartbeat is a HEARTBEAT chunk (RFC 9260 §3.3.5) or, with Ack set, a
// HEARTBEAT ACK chunk (§3.3.6). Both carry one Heartbeat Info parameter,
// opaque to the receiver of the HEARTBEAT, which returns it unchanged in
// the HEARTBEAT ACK (§8.3).
type Heartbeat struct {
	// Ack selects HEARTBEAT ACK.
	Ack bool
	// Info is the value of the Heartbeat Info parameter; parsed, it
	// aliases the packet.
	Info []byte
}

// ParseHeartbeat decodes a HEARTBEAT or HEARTBEAT ACK chunk. A chunk that
// does not start with a Heartbeat Info parameter is
// ErrMissingHeartbeatInfo; one whose parameter overruns it
// ErrParamLength. Octets after the parameter are ignored.
func ParseHeartbeat(c Chunk) (Heartbeat, error) {
	if c.Type != ChunkHeartbeat && c.Type != ChunkHeartbeatAck {
		return Heartbeat{}, ErrChunkType
	}
	if len(c.Value) < tlvHeaderLen {
		return Heartbeat{}, ErrMissingHeartbeatInfo
	}
	p, _, err := ParseParam(c.Value)
	if err != nil {
		return Heartbeat{}, err
	}
	if p.Type != ParamHeartbeatInfo {
		return Heartbeat{}, ErrMissingHeartbeatInfo
	}
	return Heartbeat{Ack: c.Type == ChunkHeartbeatAck, Info: p.Value}, nil
}

// MaxHeartbeatInfo is the longest Heartbeat Info a chunk can carry.
const MaxHeartbeatInfo = MaxChunkLen - ChunkHeaderLen - tlvHeaderLen

// Len returns the octets Append writes, padding included.
func (h *Heartbeat) Len() int { return ChunkHeaderLen + tlvLen(len(h.Info)) }

// Append appends the chunk, padded. It panics if Info is longer than
// MaxHeartbeatInfo, which a parsed one never is.
func (h *Heartbeat) Append(b []byte) []byte {
	t := ChunkHeartbeat
	if h.Ack {
		t = ChunkHeartbeatAck
	}
	b = appendChunkHeader(b, t, 0, ChunkHeaderLen+tlvHeaderLen+len(h.Info))
	return pad(AppendParam(b, ParamHeartbeatInfo, h.Info))
}
