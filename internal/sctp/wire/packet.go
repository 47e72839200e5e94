package wire

// Packet is a view of a received SCTP packet (RFC 9260 §3): its common
// header and its chunks, aliasing the buffer it was parsed from.
type Packet struct {
	Header Header
	chunks []byte
}

// ParsePacket reads an SCTP packet: the common header, whose checksum must
// be right (RFC 9260 §6.8; ErrChecksum otherwise). The chunks are read by
// the iterator of Chunks, which checks each as it goes.
func ParsePacket(b []byte) (Packet, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Packet{}, err
	}
	if !ChecksumOK(b) {
		return Packet{}, ErrChecksum
	}
	return Packet{Header: h, chunks: b[HeaderLen:]}, nil
}

// ParsePacketNoChecksum is ParsePacket for a packet whose checksum was
// verified already, or is not to be checked.
func ParsePacketNoChecksum(b []byte) (Packet, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Packet{}, err
	}
	return Packet{Header: h, chunks: b[HeaderLen:]}, nil
}

// Chunks returns an iterator over the packet's chunks.
func (p Packet) Chunks() ChunkIter { return NewChunkIter(p.chunks) }

// ChunkBytes returns the octets after the common header.
func (p Packet) ChunkBytes() []byte { return p.chunks }

// Validate walks the chunks and returns the first framing error, so that
// a receiver can drop a malformed packet before acting on any of its
// chunks. It counts the chunks.
func (p Packet) Validate() (chunks int, err error) {
	it := p.Chunks()
	for _, ok := it.Next(); ok; _, ok = it.Next() {
		chunks++
	}
	return chunks, it.Err()
}
