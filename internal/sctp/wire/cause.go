package wire

import (
	"encoding/binary"
	"strconv"
)

// CauseCode is the Cause Code of an error cause in an ABORT or ERROR chunk
// (RFC 9260 §3.3.10; IANA "Error Cause Codes" registry).
type CauseCode uint16

// The error causes of RFC 9260 §3.3.10.
const (
	CauseInvalidStream           CauseCode = 1  // §3.3.10.1: Stream Identifier
	CauseMissingParam            CauseCode = 2  // §3.3.10.2: the missing parameter types
	CauseStaleCookie             CauseCode = 3  // §3.3.10.3: Measure of Staleness, µs
	CauseOutOfResource           CauseCode = 4  // §3.3.10.4: no information
	CauseUnresolvableAddress     CauseCode = 5  // §3.3.10.5: the address parameter
	CauseUnrecognizedChunk       CauseCode = 6  // §3.3.10.6: the chunk
	CauseInvalidMandatoryParam   CauseCode = 7  // §3.3.10.7: no information
	CauseUnrecognizedParams      CauseCode = 8  // §3.3.10.8: the parameters
	CauseNoUserData              CauseCode = 9  // §3.3.10.9: the TSN
	CauseCookieWhileShuttingDown CauseCode = 10 // §3.3.10.10: no information
	CauseRestartWithNewAddresses CauseCode = 11 // §3.3.10.11: the new address parameters
	CauseUserInitiatedAbort      CauseCode = 12 // §3.3.10.12: the upper layer's reason
	CauseProtocolViolation       CauseCode = 13 // §3.3.10.13: additional information
)

// The lengths of the fixed Cause-Specific Information of some causes.
const (
	causeInvalidStreamLen  = 4 // Stream Identifier, Reserved
	causeUint32Len         = 4 // Measure of Staleness, TSN
	causeMissingParamFixed = 4 // Number of missing params
)

var causeNames = [...]string{
	"Invalid Stream Identifier", "Missing Mandatory Parameter", "Stale Cookie Error",
	"Out of Resource", "Unresolvable Address", "Unrecognized Chunk Type",
	"Invalid Mandatory Parameter", "Unrecognized Parameters", "No User Data",
	"Cookie Received While Shutting Down", "Restart of an Association with New Addresses",
	"User-Initiated Abort", "Protocol Violation",
}

// String returns the cause's name as RFC 9260 §3.3.10 spells it, or its
// number.
func (c CauseCode) String() string {
	if c >= CauseInvalidStream && c <= CauseProtocolViolation {
		return causeNames[c-CauseInvalidStream]
	}
	return "cause code " + strconv.Itoa(int(c))
}

// Cause is a view of one error cause (RFC 9260 §3.3.10): its code and its
// Cause-Specific Information, without padding, aliasing the chunk.
type Cause struct {
	Code CauseCode
	Info []byte
}

// ParseCause reads the cause at the start of b; n is the offset of the
// next one. A Cause Length below 4 or beyond b is ErrCauseLength.
func ParseCause(b []byte) (c Cause, n int, err error) {
	t, v, n, err := parseTLV(b, ErrCauseLength)
	if err != nil {
		return Cause{}, 0, err
	}
	return Cause{Code: CauseCode(t), Info: v}, n, nil
}

// CauseIter walks the error causes of an ABORT or ERROR chunk without
// allocating, as ChunkIter walks chunks.
type CauseIter struct {
	b   []byte
	err error
}

// NewCauseIter returns an iterator over the causes in b.
func NewCauseIter(b []byte) CauseIter { return CauseIter{b: b} }

// Next returns the next cause; ok is false at the end or at a malformed
// cause (then Err says so).
func (it *CauseIter) Next() (c Cause, ok bool) {
	if len(it.b) == 0 || it.err != nil {
		return Cause{}, false
	}
	c, n, err := ParseCause(it.b)
	if err != nil {
		it.err, it.b = err, nil
		return Cause{}, false
	}
	it.b = it.b[n:]
	return c, true
}

// Err returns the error that ended the iteration, nil at a clean end.
func (it *CauseIter) Err() error { return it.err }

func (c Cause) fixed(code CauseCode, n int) error {
	if c.Code != code {
		return ErrCauseCode
	}
	if len(c.Info) < n {
		return ErrCauseLength
	}
	return nil
}

// InvalidStream returns the Stream Identifier of an Invalid Stream
// Identifier cause (§3.3.10.1).
func (c Cause) InvalidStream() (uint16, error) {
	if err := c.fixed(CauseInvalidStream, causeInvalidStreamLen); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint16(c.Info), nil
}

// Staleness returns the Measure of Staleness of a Stale Cookie Error
// cause, in microseconds (§3.3.10.3).
func (c Cause) Staleness() (uint32, error) {
	if err := c.fixed(CauseStaleCookie, causeUint32Len); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(c.Info), nil
}

// NoUserDataTSN returns the TSN of a No User Data cause (§3.3.10.9).
func (c Cause) NoUserDataTSN() (uint32, error) {
	if err := c.fixed(CauseNoUserData, causeUint32Len); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(c.Info), nil
}

// MissingParams appends to dst the parameter types of a Missing Mandatory
// Parameter cause (§3.3.10.2); it allocates only if dst lacks the room.
// A count beyond the cause's length is ErrCauseLength.
func (c Cause) MissingParams(dst []ParamType) ([]ParamType, error) {
	if err := c.fixed(CauseMissingParam, causeMissingParamFixed); err != nil {
		return dst, err
	}
	n := binary.BigEndian.Uint32(c.Info)
	v := c.Info[causeMissingParamFixed:]
	if uint64(n)*2 > uint64(len(v)) {
		return dst, ErrCauseLength
	}
	for i := 0; i < int(n); i++ {
		dst = append(dst, ParamType(binary.BigEndian.Uint16(v[2*i:])))
	}
	return dst, nil
}

// UnrecognizedChunk returns the chunk reported by an Unrecognized Chunk
// Type cause (§3.3.10.6).
func (c Cause) UnrecognizedChunk() (Chunk, error) {
	if c.Code != CauseUnrecognizedChunk {
		return Chunk{}, ErrCauseCode
	}
	ch, _, err := ParseChunk(c.Info)
	return ch, err
}

// Params returns an iterator over the parameters an Unresolvable Address
// (§3.3.10.5), Unrecognized Parameters (§3.3.10.8) or Restart of an
// Association with New Addresses (§3.3.10.11) cause carries; of another
// cause, an iterator that yields nothing and reports ErrCauseCode.
func (c Cause) Params() ParamIter {
	switch c.Code {
	case CauseUnresolvableAddress, CauseUnrecognizedParams, CauseRestartWithNewAddresses:
		return NewParamIter(c.Info)
	}
	return ParamIter{err: ErrCauseCode}
}

// AppendCause aligns b to 4 octets and appends an error cause with the
// given information; the padding after it comes with what follows or
// with EndChunk. It panics if info is longer than 65531 octets. Causes
// without information (Out of Resource, Invalid Mandatory Parameter,
// Cookie Received While Shutting Down) are written with a nil info.
func AppendCause(b []byte, code CauseCode, info []byte) []byte {
	if len(info) > maxTLVValue {
		panic("internal/sctp/wire: " + code.String() + " cause longer than 65535 octets")
	}
	return append(appendTLVHeader(b, uint16(code), len(info)), info...)
}

// AppendCauseInvalidStream appends an Invalid Stream Identifier cause
// (§3.3.10.1).
func AppendCauseInvalidStream(b []byte, streamID uint16) []byte {
	b = appendTLVHeader(b, uint16(CauseInvalidStream), causeInvalidStreamLen)
	return append(binary.BigEndian.AppendUint16(b, streamID), 0, 0)
}

// AppendCauseMissingParams appends a Missing Mandatory Parameter cause
// listing types (§3.3.10.2).
func AppendCauseMissingParams(b []byte, types ...ParamType) []byte {
	b = appendTLVHeader(b, uint16(CauseMissingParam), causeMissingParamFixed+2*len(types))
	b = binary.BigEndian.AppendUint32(b, uint32(len(types)))
	for _, t := range types {
		b = binary.BigEndian.AppendUint16(b, uint16(t))
	}
	return b
}

// AppendCauseStaleCookie appends a Stale Cookie Error cause with the
// Measure of Staleness in microseconds (§3.3.10.3, §5.1.5 step 3).
func AppendCauseStaleCookie(b []byte, staleness uint32) []byte {
	b = appendTLVHeader(b, uint16(CauseStaleCookie), causeUint32Len)
	return binary.BigEndian.AppendUint32(b, staleness)
}

// AppendCauseNoUserData appends a No User Data cause naming the TSN of the
// empty DATA chunk (§3.3.10.9).
func AppendCauseNoUserData(b []byte, tsn uint32) []byte {
	b = appendTLVHeader(b, uint16(CauseNoUserData), causeUint32Len)
	return binary.BigEndian.AppendUint32(b, tsn)
}

// AppendCauseUnresolvableAddress appends an Unresolvable Address cause
// carrying the address parameter p, such as a Host Name Address
// (§3.3.10.5). A parameter too long to be carried is not reported: b is
// returned unchanged.
func AppendCauseUnresolvableAddress(b []byte, p Param) []byte {
	if p.Len() > maxTLVValue {
		return b
	}
	b = appendTLVHeader(b, uint16(CauseUnresolvableAddress), p.Len())
	return AppendParam(b, p.Type, p.Value)
}

// AppendCauseUnrecognizedChunk appends an Unrecognized Chunk Type cause
// carrying the chunk c as received (§3.3.10.6), for a chunk whose type's
// Action asks for a report. A chunk too long to be carried is not
// reported: b is returned unchanged.
func AppendCauseUnrecognizedChunk(b []byte, c Chunk) []byte {
	if c.Len() > maxTLVValue {
		return b
	}
	b = appendTLVHeader(b, uint16(CauseUnrecognizedChunk), c.Len())
	b = append(b, byte(c.Type), c.Flags, byte(c.Len()>>8), byte(c.Len()))
	return append(b, c.Value...)
}

// AppendCauseUnrecognizedParams appends one Unrecognized Parameters cause
// (§3.3.10.8) carrying each parameter of raw, the Params.Raw of a received
// INIT ACK, that RFC 9260 §3.2.1 says to report: what an endpoint sends
// in an ERROR chunk with its COOKIE ECHO. Nothing is appended when there
// is nothing to report, or too much to fit a cause. As everywhere, the
// Cause Length leaves out the padding of the last parameter.
func AppendCauseUnrecognizedParams(b []byte, raw []byte) []byte {
	n := 0
	forEachToReport(raw, func(q Param) { n = padded(n) + q.Len() })
	if n == 0 || n > maxTLVValue {
		return b
	}
	b = appendTLVHeader(b, uint16(CauseUnrecognizedParams), n)
	forEachToReport(raw, func(q Param) { b = AppendParam(b, q.Type, q.Value) })
	return b
}
