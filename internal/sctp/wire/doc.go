// Package wire encodes and decodes SCTP packets (RFC 9260 §3): the common
// header, the chunks an SCTP endpoint for DDP (RFC 5043) exchanges, their
// parameters and error causes, and the CRC32c checksum (RFC 9260
// Appendix B).
//
// Decoding never copies: a parsed chunk, parameter or cause is a view whose
// byte slices alias the packet buffer, valid while the buffer is. Encoding
// appends to a caller's buffer and allocates nothing when the buffer has
// room. Every length read from the wire is checked; bad input yields an
// error, never a panic.
package wire

// # Reading a packet
//
//	pkt, err := wire.ParsePacket(buf) // common header and checksum
//	it := pkt.Chunks()
//	for c, ok := it.Next(); ok; c, ok = it.Next() {
//		switch c.Type {
//		case wire.ChunkData:
//			d, err := wire.ParseData(c)
//			...
//		default:
//			// c.Type.Action() says what RFC 9260 §3.2 asks for a chunk
//			// type the endpoint does not implement.
//		}
//	}
//	if it.Err() != nil { ... } // a malformed chunk ended the packet
//
// # Writing a packet
//
//	b := wire.AppendHeader(buf[:0], wire.Header{SrcPort: 5000, DstPort: 5000, VerificationTag: tag})
//	b = sack.Append(b)
//	b = data.Append(b)
//	wire.SetChecksum(b)
//
// Every chunk type has one file: its type (Data, Init, SACK, Heartbeat,
// Abort, Shutdown, ShutdownAck, ErrorChunk, CookieEcho, CookieAck,
// ShutdownComplete, ForwardTSN), a Parse function taking a Chunk, an
// Append method and a Len method giving the octets Append writes.
// Chunks, parameters and causes whose size is only known as they are
// written are built in place with BeginChunk and EndChunk.
//
// Alignment: chunks, parameters and causes start on 4-octet boundaries
// (RFC 9260 §3.2, §3.2.1). The append functions keep that alignment
// relative to the start of the buffer they are given, so they are given
// the packet from its first octet (or a scratch buffer whose first octet
// stands for an aligned position).
