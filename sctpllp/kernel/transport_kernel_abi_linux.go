//go:build linux

package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"unsafe"

	"github.com/ishidawataru/sctp"
	"golang.org/x/sys/unix"
)

// The Linux SCTP sockets API (RFC 6458; include/uapi/linux/sctp.h) as the
// kernel backend uses it: the structures the kernel hands back (notifications
// and control messages) are decoded here without trusting their lengths, and
// the option structures it takes are encoded here. Integers are in host
// order unless noted; PPIDs travel in network order both ways (the kernel
// copies sinfo_ppid to the DATA chunk unchanged).

// Socket options missing from github.com/ishidawataru/sctp.
const (
	kernelOptReconfigSupported   = 117 // SCTP_RECONFIG_SUPPORTED, RFC 6525 support on the endpoint
	kernelOptEnableStreamReset   = 118 // SCTP_ENABLE_STREAM_RESET
	kernelOptResetStreams        = 119 // SCTP_RESET_STREAMS
	kernelOptRemoteUDPEncapsPort = 132 // SCTP_REMOTE_UDP_ENCAPS_PORT, RFC 6951

	kernelEnableResetStreamReq = 0x01 // SCTP_ENABLE_RESET_STREAM_REQ
	kernelStreamResetIncoming  = 0x01 // SCTP_STREAM_RESET_INCOMING (request flag)
	kernelStreamResetOutgoing  = 0x02 // SCTP_STREAM_RESET_OUTGOING (request flag)

	kernelSppPMTUDDisable = 1 << 4 // SPP_PMTUD_DISABLE in spp_flags
	kernelSppHBEnable     = 1 << 0 // SPP_HB_ENABLE: apply spp_hbinterval
	// kernelAssocParamsLen is struct sctp_assocparams: assoc id (32),
	// sasoc_asocmaxrxt (16), number of peer destinations (16), peer rwnd,
	// local rwnd, cookie life (32 each).
	kernelAssocParamsLen = 20

	kernelMsgEOR          = unix.MSG_EOR
	kernelMsgNotification = sctp.MSG_NOTIFICATION
)

// Notification types (enum sctp_sn_type).
const (
	kernelSNAssocChange    = uint16(sctp.SCTP_ASSOC_CHANGE)           // 0x8001
	kernelSNRemoteError    = uint16(sctp.SCTP_REMOTE_ERROR)           // 0x8004
	kernelSNShutdown       = uint16(sctp.SCTP_SHUTDOWN_EVENT)         // 0x8005
	kernelSNPartialDeliver = uint16(sctp.SCTP_PARTIAL_DELIVERY_EVENT) // 0x8006
	kernelSNAdaptation     = uint16(sctp.SCTP_ADAPTATION_INDICATION)  // 0x8007
	kernelSNSenderDry      = 0x8009                                   // SCTP_SENDER_DRY_EVENT
	kernelSNStreamReset    = 0x800a                                   // SCTP_STREAM_RESET_EVENT
)

// sac_state values of SCTP_ASSOC_CHANGE (enum sctp_sac_state).
const (
	kernelCommUp       = uint16(sctp.SCTP_COMM_UP)
	kernelCommLost     = uint16(sctp.SCTP_COMM_LOST)
	kernelRestart      = uint16(sctp.SCTP_RESTART)
	kernelShutdownComp = uint16(sctp.SCTP_SHUTDOWN_COMP)
	kernelCantStrAssoc = uint16(sctp.SCTP_CANT_STR_ASSOC)
)

// strreset_flags of SCTP_STREAM_RESET_EVENT.
const (
	kernelResetIncomingSSN = 0x0001
	kernelResetOutgoingSSN = 0x0002
	kernelResetDenied      = 0x0004
	kernelResetFailed      = 0x0008
)

// kernelPDAborted is pdapi_indication SCTP_PARTIAL_DELIVERY_ABORTED.
const kernelPDAborted = 0

// kernelCauseInvalidStream is the "Invalid Stream Identifier" error cause
// (RFC 4960 §3.3.10.1): the peer dropped a DATA chunk.
const kernelCauseInvalidStream = 1

// errKernelNotification reports a notification shorter than its type's
// structure or whose length field disagrees with what recvmsg returned.
var errKernelNotification = errors.New("sctpllp: malformed SCTP notification")

// kernelNotification is one decoded SCTP notification (RFC 6458 §6.1).
type kernelNotification struct {
	// Type and Flags are sn_type and sn_flags.
	Type, Flags uint16
	// State, Error, OutStreams and InStreams are those of SCTP_ASSOC_CHANGE.
	State, Error, OutStreams, InStreams uint16
	// Adaptation is sai_adaptation_ind of SCTP_ADAPTATION_INDICATION.
	Adaptation uint32
	// PDIndication is pdapi_indication of SCTP_PARTIAL_DELIVERY_EVENT.
	PDIndication uint32
	// Cause is sre_error of SCTP_REMOTE_ERROR (network order on the wire).
	Cause uint16
	// resetList holds strreset_stream_list of SCTP_STREAM_RESET_EVENT: two
	// octets per stream, host order (a sub-slice of the input).
	resetList []byte
}

// ResetStreams reports the number of streams a stream-reset event lists.
func (n *kernelNotification) ResetStreams() int { return len(n.resetList) / 2 }

// ResetStream returns the i-th stream identifier of a stream-reset event.
func (n *kernelNotification) ResetStream(i int) uint16 {
	return binary.NativeEndian.Uint16(n.resetList[2*i:])
}

// Minimum sizes of the notification structures.
const (
	kernelSNHeaderLen       = 8   // struct sctp_tlv
	kernelSNAssocChangeLen  = 20  // struct sctp_assoc_change without sac_info
	kernelSNRemoteErrorLen  = 16  // struct sctp_remote_error without sre_data
	kernelSNShutdownLen     = 12  // struct sctp_shutdown_event
	kernelSNPartialLen      = 24  // struct sctp_pdapi_event
	kernelSNAdaptationLen   = 16  // struct sctp_adaptation_event
	kernelSNStreamResetLen  = 12  // struct sctp_stream_reset_event without the list
	kernelSndRcvInfoLen     = 32  // struct sctp_sndrcvinfo
	kernelSndInfoLen        = 16  // struct sctp_sndinfo
	kernelAssocValueLen     = 8   // struct sctp_assoc_value
	kernelResetStreamsHdr   = 8   // struct sctp_reset_streams without the list
	kernelPaddrParamsLen    = 156 // struct sctp_paddrparams (packed, aligned(4))
	kernelPaddrHBIntervalAt = 132 // spp_hbinterval (ms)
	kernelPaddrPathMaxRxtAt = 136 // spp_pathmaxrxt (16 bits)
	kernelPaddrMTUAt        = 138 // spp_pathmtu
	kernelPaddrFlagsAt      = 146 // spp_flags
	kernelUDPEncapsLen      = 144 // struct sctp_udpencaps
	kernelUDPEncapsPortAt   = 136 // sue_port, network order
)

// parseKernelNotification decodes one complete notification as returned by
// recvmsg with MSG_NOTIFICATION. Unknown types are returned with Type and
// Flags only. It never panics.
func parseKernelNotification(b []byte) (kernelNotification, error) {
	var n kernelNotification
	if len(b) < kernelSNHeaderLen {
		return n, fmt.Errorf("%w: %d octets", errKernelNotification, len(b))
	}
	ne := binary.NativeEndian
	n.Type = ne.Uint16(b[0:])
	n.Flags = ne.Uint16(b[2:])
	length := ne.Uint32(b[4:])
	if length < kernelSNHeaderLen || uint64(length) > uint64(len(b)) {
		return n, fmt.Errorf("%w: length field %d, %d octets read", errKernelNotification, length, len(b))
	}
	b = b[:length]
	need := 0
	switch n.Type {
	case kernelSNAssocChange:
		need = kernelSNAssocChangeLen
	case kernelSNRemoteError:
		need = kernelSNRemoteErrorLen
	case kernelSNShutdown:
		need = kernelSNShutdownLen
	case kernelSNPartialDeliver:
		need = kernelSNPartialLen
	case kernelSNAdaptation:
		need = kernelSNAdaptationLen
	case kernelSNStreamReset:
		need = kernelSNStreamResetLen
	}
	if len(b) < need {
		return n, fmt.Errorf("%w: type %#04x needs %d octets, has %d", errKernelNotification, n.Type, need, len(b))
	}
	switch n.Type {
	case kernelSNAssocChange:
		n.State = ne.Uint16(b[8:])
		n.Error = ne.Uint16(b[10:])
		n.OutStreams = ne.Uint16(b[12:])
		n.InStreams = ne.Uint16(b[14:])
	case kernelSNRemoteError:
		n.Cause = binary.BigEndian.Uint16(b[8:])
	case kernelSNPartialDeliver:
		n.PDIndication = ne.Uint32(b[8:])
	case kernelSNAdaptation:
		n.Adaptation = ne.Uint32(b[8:])
	case kernelSNStreamReset:
		list := b[kernelSNStreamResetLen:]
		n.resetList = list[:len(list)&^1]
	}
	return n, nil
}

// kernelRcvInfo is what the SCTP_SNDRCV control message of a received
// message says (struct sctp_sndrcvinfo, RFC 6458 §5.3.2).
type kernelRcvInfo struct {
	Stream uint16
	Flags  uint16
	PPID   uint32 // host order
}

// kernelCmsgAlign rounds a control message length up as CMSG_ALIGN does.
func kernelCmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}

// parseKernelRcvInfo finds the SCTP_SNDRCV control message in the ancillary
// data of recvmsg. ok is false if there is none or oob is malformed. It
// never panics and does not allocate.
func parseKernelRcvInfo(oob []byte) (info kernelRcvInfo, ok bool) {
	ne := binary.NativeEndian
	for len(oob) >= unix.SizeofCmsghdr {
		var l int
		if unix.SizeofCmsghdr == 16 {
			l64 := ne.Uint64(oob[0:])
			if l64 > uint64(len(oob)) {
				return info, false
			}
			l = int(l64)
		} else {
			l = int(ne.Uint32(oob[0:]))
		}
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return info, false
		}
		level := int32(ne.Uint32(oob[unix.SizeofCmsghdr-8:]))
		typ := int32(ne.Uint32(oob[unix.SizeofCmsghdr-4:]))
		data := oob[unix.SizeofCmsghdr:l]
		if level == unix.IPPROTO_SCTP && typ == sctp.SCTP_CMSG_SNDRCV && len(data) >= 12 {
			info.Stream = ne.Uint16(data[0:])
			info.Flags = ne.Uint16(data[4:])
			info.PPID = binary.BigEndian.Uint32(data[8:])
			return info, true
		}
		step := kernelCmsgAlign(l)
		if step > len(oob) {
			return info, false
		}
		oob = oob[step:]
	}
	return info, false
}

// appendKernelSndInfo appends a control message SCTP_SNDINFO (struct
// sctp_sndinfo, RFC 6458 §5.3.4) sending on stream sid with the PPID in
// network order and the given snd_flags.
func appendKernelSndInfo(b []byte, sid uint16, ppid uint32, flags uint16) []byte {
	ne := binary.NativeEndian
	start := len(b)
	l := unix.CmsgLen(kernelSndInfoLen)
	if unix.SizeofCmsghdr == 16 {
		b = ne.AppendUint64(b, uint64(l))
	} else {
		b = ne.AppendUint32(b, uint32(l))
	}
	b = ne.AppendUint32(b, unix.IPPROTO_SCTP)
	b = ne.AppendUint32(b, sctp.SCTP_CMSG_SNDINFO)
	b = ne.AppendUint16(b, sid)
	b = ne.AppendUint16(b, flags)
	b = binary.BigEndian.AppendUint32(b, ppid)
	b = ne.AppendUint32(b, 0) // snd_context
	b = ne.AppendUint32(b, 0) // snd_assoc_id: ignored on one-to-one sockets
	for len(b)-start < unix.CmsgSpace(kernelSndInfoLen) {
		b = append(b, 0)
	}
	return b
}

// kernelEventSubscribe is struct sctp_event_subscribe up to
// sctp_stream_reset_event (the library's EventSubscribe stops one field
// short). The kernel accepts a prefix of its current structure.
type kernelEventSubscribe struct {
	DataIO, Association, Address, SendFailure, PeerError, Shutdown,
	PartialDelivery, AdaptationLayer, Authentication, SenderDry, StreamReset uint8
}

// Address options of the sockets API (RFC 6458 §9.1, §9.3, §9.9) and
// struct sctp_getaddrs. They are used through kernelSetsockopt and
// kernelGetsockopt, which convert the pointer inside the system call
// expression: the library's own wrappers convert it earlier, which is unsafe
// for a stack object if the stack moves in between.
const (
	kernelOptBindxAdd      = sctp.SCTP_SOCKOPT_BINDX_ADD // 100
	kernelOptConnectx      = sctp.SCTP_SOCKOPT_CONNECTX  // 110
	kernelOptGetPeerAddrs  = sctp.SCTP_GET_PEER_ADDRS    // 108
	kernelOptGetLocalAddrs = sctp.SCTP_GET_LOCAL_ADDRS   // 109
	kernelGetAddrsHdr      = 8                           // assoc_id, addr_num
)

// parseKernelAddrs decodes the packed sockaddr_in/sockaddr_in6 list that
// SCTP_GET_LOCAL_ADDRS/SCTP_GET_PEER_ADDRS return after struct
// sctp_getaddrs' header; n is addr_num. It never panics.
func parseKernelAddrs(b []byte, n uint32) (*sctp.SCTPAddr, error) {
	a := &sctp.SCTPAddr{}
	for i := uint32(0); i < n; i++ {
		if len(b) < 2 {
			return nil, fmt.Errorf("sctpllp: address list truncated at entry %d", i)
		}
		family := binary.NativeEndian.Uint16(b)
		var size int
		switch family {
		case unix.AF_INET:
			size = unix.SizeofSockaddrInet4
		case unix.AF_INET6:
			size = unix.SizeofSockaddrInet6
		default:
			return nil, fmt.Errorf("sctpllp: address family %d in address list", family)
		}
		if len(b) < size {
			return nil, fmt.Errorf("sctpllp: address list truncated at entry %d", i)
		}
		port := int(binary.BigEndian.Uint16(b[2:]))
		if i > 0 && port != a.Port {
			return nil, fmt.Errorf("sctpllp: ports %d and %d in one address list", a.Port, port)
		}
		a.Port = port
		if family == unix.AF_INET {
			a.IPAddrs = append(a.IPAddrs, net.IPAddr{IP: net.IP(append([]byte(nil), b[4:8]...))})
		} else {
			a.IPAddrs = append(a.IPAddrs, net.IPAddr{IP: net.IP(append([]byte(nil), b[8:24]...))})
		}
		b = b[size:]
	}
	return a, nil
}
