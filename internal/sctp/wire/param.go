package wire

import "strconv"

// ParamType is the Parameter Type of a chunk parameter (RFC 9260 §3.2.1;
// IANA "Chunk Parameter Types" registry).
type ParamType uint16

// Parameter types. The package decodes the INIT and INIT ACK ones
// (InitParams) and Heartbeat Info; the others are named for logs.
// ParamHeaderLen is the length of a parameter's (and an error cause's)
// Type and Length fields (RFC 9260 §3.2.1).
const ParamHeaderLen = tlvHeaderLen

const (
	ParamHeartbeatInfo       ParamType = 1      // RFC 9260 §3.3.5
	ParamIPv4Address         ParamType = 5      // RFC 9260 §3.3.2.1
	ParamIPv6Address         ParamType = 6      // RFC 9260 §3.3.2.1
	ParamStateCookie         ParamType = 7      // RFC 9260 §3.3.3.1
	ParamUnrecognized        ParamType = 8      // RFC 9260 §3.3.3.1
	ParamCookiePreservative  ParamType = 9      // RFC 9260 §3.3.2.1
	ParamHostNameAddress     ParamType = 11     // RFC 9260 §3.3.2.1 (deprecated)
	ParamSupportedAddrTypes  ParamType = 12     // RFC 9260 §3.3.2.1
	ParamOutgoingSSNReset    ParamType = 13     // RFC 6525 §4.1
	ParamIncomingSSNReset    ParamType = 14     // RFC 6525 §4.2
	ParamSSNTSNReset         ParamType = 15     // RFC 6525 §4.3
	ParamReconfigResponse    ParamType = 16     // RFC 6525 §4.4
	ParamAddOutgoingStreams  ParamType = 17     // RFC 6525 §4.5
	ParamAddIncomingStreams  ParamType = 18     // RFC 6525 §4.6
	ParamECNCapable          ParamType = 0x8000 // RFC 9260 Appendix A (not decoded)
	ParamZeroChecksum        ParamType = 0x8001 // RFC 9653 §4: Zero Checksum Acceptable
	ParamRandom              ParamType = 0x8002 // RFC 4895 (not decoded)
	ParamChunkList           ParamType = 0x8003 // RFC 4895 (not decoded)
	ParamRequestedHMACAlgo   ParamType = 0x8004 // RFC 4895 (not decoded)
	ParamPadding             ParamType = 0x8005 // RFC 4820 (not decoded)
	ParamSupportedExtensions ParamType = 0x8008 // RFC 5061 §4.2.7
	ParamForwardTSNSupported ParamType = 0xC000 // RFC 3758 §3.1
	ParamAddIPAddress        ParamType = 0xC001 // RFC 5061 §4.2.1 (not decoded)
	ParamDeleteIPAddress     ParamType = 0xC002 // RFC 5061 §4.2.2 (not decoded)
	ParamErrorCauseIndicator ParamType = 0xC003 // RFC 5061 §4.2.3 (not decoded)
	ParamSetPrimaryAddress   ParamType = 0xC004 // RFC 5061 §4.2.4 (not decoded)
	ParamSuccessIndication   ParamType = 0xC005 // RFC 5061 §4.2.5 (not decoded)
	ParamAdaptationLayer     ParamType = 0xC006 // RFC 5061 §4.2.6, RFC 5043 §5.1
)

var paramNames = map[ParamType]string{
	ParamHeartbeatInfo: "Heartbeat Info", ParamIPv4Address: "IPv4 Address",
	ParamIPv6Address: "IPv6 Address", ParamStateCookie: "State Cookie",
	ParamUnrecognized: "Unrecognized Parameter", ParamCookiePreservative: "Cookie Preservative",
	ParamHostNameAddress: "Host Name Address", ParamSupportedAddrTypes: "Supported Address Types",
	ParamOutgoingSSNReset: "Outgoing SSN Reset Request", ParamIncomingSSNReset: "Incoming SSN Reset Request",
	ParamSSNTSNReset: "SSN/TSN Reset Request", ParamReconfigResponse: "Re-configuration Response",
	ParamAddOutgoingStreams: "Add Outgoing Streams Request", ParamAddIncomingStreams: "Add Incoming Streams Request",
	ParamECNCapable: "ECN Capable", ParamZeroChecksum: "Zero Checksum Acceptable",
	ParamRandom: "Random", ParamChunkList: "Chunk List", ParamRequestedHMACAlgo: "Requested HMAC Algorithm",
	ParamPadding: "Padding", ParamSupportedExtensions: "Supported Extensions",
	ParamForwardTSNSupported: "Forward-TSN-Supported", ParamAddIPAddress: "Add IP Address",
	ParamDeleteIPAddress: "Delete IP Address", ParamErrorCauseIndicator: "Error Cause Indication",
	ParamSetPrimaryAddress: "Set Primary Address", ParamSuccessIndication: "Success Indication",
	ParamAdaptationLayer: "Adaptation Layer Indication",
}

// String returns the parameter type's name, or its number.
func (t ParamType) String() string {
	if s, ok := paramNames[t]; ok {
		return s
	}
	return "parameter type " + strconv.Itoa(int(t))
}

// Action returns what RFC 9260 §3.2.1 asks of an endpoint that does not
// recognize a parameter of this type, coded in its two highest bits.
func (t ParamType) Action() Action { return Action(t >> 14) }

// Param is a view of one parameter (RFC 9260 §3.2.1): its type and its
// value, without padding, aliasing the chunk.
type Param struct {
	Type  ParamType
	Value []byte
}

// Len returns the Parameter Length field: header and value.
func (p Param) Len() int { return tlvHeaderLen + len(p.Value) }

// Append appends the parameter, aligned (AppendParam).
func (p Param) Append(b []byte) []byte { return AppendParam(b, p.Type, p.Value) }

// AppendParam aligns b to 4 octets and appends a parameter of type t with
// the given value; the padding after it comes with whatever follows (see
// EndChunk). It panics if the value is longer than 65531 octets.
func AppendParam(b []byte, t ParamType, value []byte) []byte {
	if len(value) > maxTLVValue {
		panic("internal/sctp/wire: " + t.String() + " parameter longer than 65535 octets")
	}
	return append(appendTLVHeader(b, uint16(t), len(value)), value...)
}

// ParseParam reads the parameter at the start of b; n is the offset of
// the next one. A Parameter Length below 4 or beyond b is ErrParamLength.
func ParseParam(b []byte) (p Param, n int, err error) {
	t, v, n, err := parseTLV(b, ErrParamLength)
	if err != nil {
		return Param{}, 0, err
	}
	return Param{Type: ParamType(t), Value: v}, n, nil
}

// ParamIter walks the parameters of a chunk without allocating:
//
//	it := wire.NewParamIter(b)
//	for p, ok := it.Next(); ok; p, ok = it.Next() { ... }
//	if err := it.Err(); err != nil { ... }
type ParamIter struct {
	b   []byte
	err error
}

// NewParamIter returns an iterator over the parameters in b.
func NewParamIter(b []byte) ParamIter { return ParamIter{b: b} }

// Next returns the next parameter; ok is false at the end or at a
// malformed parameter (then Err says so).
func (it *ParamIter) Next() (p Param, ok bool) {
	if len(it.b) == 0 || it.err != nil {
		return Param{}, false
	}
	p, n, err := ParseParam(it.b)
	if err != nil {
		it.err, it.b = err, nil
		return Param{}, false
	}
	it.b = it.b[n:]
	return p, true
}

// Err returns the error that ended the iteration, nil at a clean end.
func (it *ParamIter) Err() error { return it.err }
