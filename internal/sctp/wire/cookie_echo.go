package wire

// CookieEcho is a COOKIE ECHO chunk (RFC 9260 §3.3.11): the State Cookie
// of the peer's INIT ACK, returned unchanged.
type CookieEcho struct {
	// Cookie is the State Cookie; parsed, it aliases the packet.
	Cookie []byte
}

// ParseCookieEcho decodes a COOKIE ECHO chunk. The cookie is not judged
// here: an empty or foreign one fails its MAC check (§5.1.5).
func ParseCookieEcho(c Chunk) (CookieEcho, error) {
	if err := checkType(c, ChunkCookieEcho); err != nil {
		return CookieEcho{}, err
	}
	return CookieEcho{Cookie: c.Value}, nil
}

// MaxCookie is the longest State Cookie a COOKIE ECHO can carry.
const MaxCookie = MaxChunkLen - ChunkHeaderLen

// Len returns the octets Append writes, padding included.
func (e *CookieEcho) Len() int { return padded(ChunkHeaderLen + len(e.Cookie)) }

// Append appends the chunk, padded; it panics if Cookie is longer than
// MaxCookie.
func (e *CookieEcho) Append(b []byte) []byte {
	b = appendChunkHeader(b, ChunkCookieEcho, 0, ChunkHeaderLen+len(e.Cookie))
	return pad(append(b, e.Cookie...))
}
