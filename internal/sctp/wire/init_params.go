package wire

import (
	"encoding/binary"
	"net/netip"
)

// MaxInitAddrs is how many IPv4/IPv6 Address parameters InitParams keeps;
// NumAddrs counts those beyond it too.
const MaxInitAddrs = 8

// AddrTypes is the set of address types of a Supported Address Types
// parameter (RFC 9260 §3.3.2.1).
type AddrTypes uint8

// Address types; the values are the parameter types that name them.
const (
	AddrTypeIPv4     AddrTypes = 1 << 0 // IPv4 Address (5)
	AddrTypeIPv6     AddrTypes = 1 << 1 // IPv6 Address (6)
	AddrTypeHostName AddrTypes = 1 << 2 // Host Name Address (11), deprecated
)

// EDMIDDTLS is the Error Detection Method Identifier of SCTP over DTLS
// (RFC 9653 §5.4, RFC 8261) in a Zero Checksum Acceptable parameter: the
// DTLS records' integrity check stands in for the CRC32c.
const EDMIDDTLS uint32 = 1

// AdaptationDDP is the Adaptation Code Point of DDP in the Adaptation
// Layer Indication parameter (RFC 5043 §5.1, §11.1).
const AdaptationDDP uint32 = 1

// InitParams are the optional and variable-length parameters of an INIT
// (RFC 9260 §3.3.2.1) or INIT ACK (§3.3.3.1), and those of the extensions
// this stack takes part in (RFC 3758, RFC 5061, RFC 5043).
type InitParams struct {
	// Parsed, the byte slices alias the packet; a repeated parameter keeps
	// its last value. A parameter of a type not listed here is handled as its
	// type's two highest bits say (RFC 9260 §3.2.1): skipped, or ending the
	// parameters, and reported or not (Unrecognized, Report, Stopped). A
	// parameter of a listed type that does not belong in the chunk at hand
	// (a State Cookie in an INIT) is decoded all the same; the caller ignores
	// it, as RFC 9260 §3.3.2 suggests.
	//
	// Append writes the fields that are set, in the order of the fields.

	// Addrs are the addresses of the IPv4 Address and IPv6 Address
	// parameters (RFC 9260 §3.3.2.1): the first MaxInitAddrs of NumAddrs.
	// RFC 6951 §5.5: over UDP an endpoint lists none.
	Addrs    [MaxInitAddrs]netip.Addr
	NumAddrs int
	// CookiePreservative is the Suggested Cookie Life-Span Increment of a
	// Cookie Preservative parameter, in milliseconds; 0 if absent
	// (RFC 9260 §3.3.2.1, §5.2.6).
	CookiePreservative uint32
	// HostName is the value of a Host Name Address parameter, nil if
	// absent. The parameter is deprecated: RFC 9260 §3.3.2.1 has the
	// receiver answer with an ABORT, with an Unresolvable Address cause.
	HostName []byte
	// SupportedAddrTypes is the set of a Supported Address Types
	// parameter, if HasSupportedAddrTypes (RFC 9260 §3.3.2.1, §5.1.2).
	SupportedAddrTypes    AddrTypes
	HasSupportedAddrTypes bool
	// StateCookie is the value of the State Cookie parameter of an INIT
	// ACK (RFC 9260 §3.3.3.1), nil if absent.
	StateCookie []byte
	// EchoUnrecognized, for an INIT ACK being built, is the Raw
	// parameters of the INIT it answers: Append writes each of them that
	// RFC 9260 §3.2.1 says to report in an Unrecognized Parameter
	// parameter (§3.3.3.1). Not set by parsing.
	EchoUnrecognized []byte
	// ForwardTSN is the Forward-TSN-Supported parameter (RFC 3758 §3.1).
	ForwardTSN bool
	// UnrecognizedForwardTSN, for an INIT ACK being built, reports the
	// INIT's Forward-TSN-Supported parameter in an Unrecognized Parameter
	// (RFC 3758 §3.3.1: a receiver without PR-SCTP; RFC 9260 §3.2.1, its
	// type's bits 11: skip and report). Not set by parsing.
	UnrecognizedForwardTSN bool
	// Extensions lists the chunk types of a Supported Extensions
	// parameter (RFC 5061 §4.2.7), nil if absent.
	Extensions []byte
	// Adaptation is the Adaptation Code Point of an Adaptation Layer
	// Indication parameter (RFC 5061 §4.2.6), if HasAdaptation; RFC 5043
	// §5.1: AdaptationDDP in both INIT and INIT ACK of a DDP association.
	Adaptation    uint32
	HasAdaptation bool
	// ZeroChecksumEDMID is the Error Detection Method Identifier of a Zero
	// Checksum Acceptable parameter (RFC 9653 §4), 0 if absent: its sender
	// accepts packets whose checksum is zero, the method named standing in
	// for the CRC32c (EDMIDDTLS). 0 is reserved and never sent.
	ZeroChecksumEDMID uint32

	// What parsing found, not written by Append:

	// PeerUnrecognized counts the Unrecognized Parameter parameters of an
	// INIT ACK: the peer did not recognize that many of ours.
	PeerUnrecognized int
	// Unrecognized counts the parameters of types not listed here.
	Unrecognized int
	// Report is set when one of them asks to be reported (RFC 9260
	// §3.2.1): in an INIT, by EchoUnrecognized in the INIT ACK; in an
	// INIT ACK, by an ERROR chunk with AppendCauseUnrecognizedParams.
	Report bool
	// Stopped is set when one of them ended the processing of the
	// parameters (its type's highest bit 0); those after it were not
	// read.
	Stopped bool
	// Raw holds all the parameters as received.
	Raw []byte
}

// recognizedInitParam reports whether InitParams decodes t.
func recognizedInitParam(t ParamType) bool {
	switch t {
	case ParamIPv4Address, ParamIPv6Address, ParamStateCookie, ParamUnrecognized,
		ParamCookiePreservative, ParamHostNameAddress, ParamSupportedAddrTypes,
		ParamForwardTSNSupported, ParamSupportedExtensions, ParamAdaptationLayer, ParamZeroChecksum:
		return true
	}
	return false
}

// decode reads the parameters in b into p.
func (p *InitParams) decode(b []byte) error {
	*p = InitParams{Raw: b}
	it := NewParamIter(b)
	for q, ok := it.Next(); ok; q, ok = it.Next() {
		if err := p.decodeOne(q); err != nil {
			return err
		}
		if p.Stopped {
			return nil
		}
	}
	return it.Err()
}

func (p *InitParams) decodeOne(q Param) error {
	v := q.Value
	switch q.Type {
	case ParamIPv4Address, ParamIPv6Address:
		var a netip.Addr
		switch {
		case q.Type == ParamIPv4Address && len(v) == 4:
			a = netip.AddrFrom4([4]byte(v))
		case q.Type == ParamIPv6Address && len(v) == 16:
			a = netip.AddrFrom16([16]byte(v))
		default:
			return ErrParamLength
		}
		if p.NumAddrs < MaxInitAddrs {
			p.Addrs[p.NumAddrs] = a
		}
		p.NumAddrs++
	case ParamCookiePreservative:
		if len(v) != 4 {
			return ErrParamLength
		}
		p.CookiePreservative = binary.BigEndian.Uint32(v)
	case ParamHostNameAddress:
		p.HostName = v
	case ParamSupportedAddrTypes:
		if len(v)%2 != 0 {
			return ErrParamLength
		}
		p.HasSupportedAddrTypes = true
		p.SupportedAddrTypes = 0
		for i := 0; i < len(v); i += 2 {
			switch ParamType(binary.BigEndian.Uint16(v[i:])) {
			case ParamIPv4Address:
				p.SupportedAddrTypes |= AddrTypeIPv4
			case ParamIPv6Address:
				p.SupportedAddrTypes |= AddrTypeIPv6
			case ParamHostNameAddress:
				p.SupportedAddrTypes |= AddrTypeHostName
			}
		}
	case ParamStateCookie:
		p.StateCookie = v
	case ParamUnrecognized:
		p.PeerUnrecognized++
	case ParamForwardTSNSupported:
		p.ForwardTSN = true
	case ParamSupportedExtensions:
		p.Extensions = v
	case ParamAdaptationLayer:
		if len(v) != 4 {
			return ErrParamLength
		}
		p.Adaptation, p.HasAdaptation = binary.BigEndian.Uint32(v), true
	case ParamZeroChecksum:
		if len(v) != 4 {
			return ErrParamLength
		}
		p.ZeroChecksumEDMID = binary.BigEndian.Uint32(v)
	default:
		p.Unrecognized++
		a := q.Type.Action()
		p.Report = p.Report || a.Report()
		p.Stopped = !a.Skip()
	}
	return nil
}

// Supports reports whether the sender of the parameters accepts addresses
// of type t: yes when it sent no Supported Address Types parameter (RFC
// 9260 §5.1.2).
func (p *InitParams) Supports(t AddrTypes) bool {
	return !p.HasSupportedAddrTypes || p.SupportedAddrTypes&t != 0
}

// HasExtension reports whether the Supported Extensions parameter lists
// chunk type t.
func (p *InitParams) HasExtension(t ChunkType) bool {
	for _, e := range p.Extensions {
		if ChunkType(e) == t {
			return true
		}
	}
	return false
}

func (p *InitParams) addrs() []netip.Addr { return p.Addrs[:min(max(p.NumAddrs, 0), MaxInitAddrs)] }

func (p *InitParams) addrTypes() int {
	n := 0
	for t := AddrTypeIPv4; t <= AddrTypeHostName; t <<= 1 {
		if p.SupportedAddrTypes&t != 0 {
			n++
		}
	}
	return n
}

// len is the space the parameters take, padded.
func (p *InitParams) len() int {
	n := 0
	for _, a := range p.addrs() {
		if a.Is4() {
			n += tlvLen(4)
		} else {
			n += tlvLen(16)
		}
	}
	if p.CookiePreservative != 0 {
		n += tlvLen(4)
	}
	if p.HostName != nil {
		n += tlvLen(len(p.HostName))
	}
	if p.HasSupportedAddrTypes {
		n += tlvLen(2 * p.addrTypes())
	}
	if p.StateCookie != nil {
		n += tlvLen(len(p.StateCookie))
	}
	forEachToReport(p.EchoUnrecognized, func(q Param) { n += tlvLen(q.Len()) })
	if p.UnrecognizedForwardTSN {
		n += tlvLen(tlvLen(0))
	}
	if p.ForwardTSN {
		n += tlvLen(0)
	}
	if p.Extensions != nil {
		n += tlvLen(len(p.Extensions))
	}
	if p.HasAdaptation {
		n += tlvLen(4)
	}
	if p.ZeroChecksumEDMID != 0 {
		n += tlvLen(4)
	}
	return n
}

// append appends the parameters, each aligned.
func (p *InitParams) append(b []byte) []byte {
	for _, a := range p.addrs() {
		if a.Is4() {
			v := a.As4()
			b = AppendParam(b, ParamIPv4Address, v[:])
		} else {
			v := a.As16()
			b = AppendParam(b, ParamIPv6Address, v[:])
		}
	}
	if p.CookiePreservative != 0 {
		b = binary.BigEndian.AppendUint32(appendTLVHeader(b, uint16(ParamCookiePreservative), 4), p.CookiePreservative)
	}
	if p.HostName != nil {
		b = AppendParam(b, ParamHostNameAddress, p.HostName)
	}
	if p.HasSupportedAddrTypes {
		b = appendTLVHeader(b, uint16(ParamSupportedAddrTypes), 2*p.addrTypes())
		for _, t := range [...]struct {
			bit AddrTypes
			pt  ParamType
		}{{AddrTypeIPv4, ParamIPv4Address}, {AddrTypeIPv6, ParamIPv6Address}, {AddrTypeHostName, ParamHostNameAddress}} {
			if p.SupportedAddrTypes&t.bit != 0 {
				b = binary.BigEndian.AppendUint16(b, uint16(t.pt))
			}
		}
	}
	if p.StateCookie != nil {
		b = AppendParam(b, ParamStateCookie, p.StateCookie)
	}
	forEachToReport(p.EchoUnrecognized, func(q Param) {
		b = AppendParam(appendTLVHeader(b, uint16(ParamUnrecognized), q.Len()), q.Type, q.Value)
	})
	if p.UnrecognizedForwardTSN {
		b = AppendParam(appendTLVHeader(b, uint16(ParamUnrecognized), tlvLen(0)), ParamForwardTSNSupported, nil)
	}
	if p.ForwardTSN {
		b = AppendParam(b, ParamForwardTSNSupported, nil)
	}
	if p.Extensions != nil {
		b = AppendParam(b, ParamSupportedExtensions, p.Extensions)
	}
	if p.HasAdaptation {
		b = binary.BigEndian.AppendUint32(appendTLVHeader(b, uint16(ParamAdaptationLayer), 4), p.Adaptation)
	}
	if p.ZeroChecksumEDMID != 0 {
		b = binary.BigEndian.AppendUint32(appendTLVHeader(b, uint16(ParamZeroChecksum), 4), p.ZeroChecksumEDMID)
	}
	return b
}

// forEachToReport calls fn for each parameter of raw, the parameters of an
// INIT or INIT ACK, that RFC 9260 §3.2.1 says to report as unrecognized,
// up to the first one that stops the processing. It reads as decode does
// and stops at a malformed parameter.
func forEachToReport(raw []byte, fn func(Param)) {
	it := NewParamIter(raw)
	for q, ok := it.Next(); ok; q, ok = it.Next() {
		if recognizedInitParam(q.Type) {
			continue
		}
		a := q.Type.Action()
		if a.Report() && q.Len() <= maxTLVValue {
			fn(q)
		}
		if !a.Skip() {
			return
		}
	}
}
