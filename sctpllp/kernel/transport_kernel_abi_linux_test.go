//go:build linux

package kernel

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// Hand-built images of the structures of include/uapi/linux/sctp.h
// (RFC 6458 §6.1), in host order as the kernel writes them.

func snHeader(typ uint16, flags uint16, length int) []byte {
	b := make([]byte, 8, max(8, length))
	ne := binary.NativeEndian
	ne.PutUint16(b[0:], typ)
	ne.PutUint16(b[2:], flags)
	ne.PutUint32(b[4:], uint32(length))
	return b
}

func snAssocChange(state, errc, out, in uint16) []byte {
	ne := binary.NativeEndian
	b := snHeader(kernelSNAssocChange, 0, 20)
	b = ne.AppendUint16(b, state)
	b = ne.AppendUint16(b, errc)
	b = ne.AppendUint16(b, out)
	b = ne.AppendUint16(b, in)
	return ne.AppendUint32(b, 0) // sac_assoc_id
}

func snAdaptation(ind uint32) []byte {
	ne := binary.NativeEndian
	b := snHeader(kernelSNAdaptation, 0, 16)
	b = ne.AppendUint32(b, ind)
	return ne.AppendUint32(b, 0)
}

func snRemoteError(cause uint16) []byte {
	b := snHeader(kernelSNRemoteError, 0, 20)
	b = binary.BigEndian.AppendUint16(b, cause) // sre_error, network order
	b = append(b, 0, 0)                         // padding
	b = binary.NativeEndian.AppendUint32(b, 0)  // sre_assoc_id
	return append(b, 0, 1, 0, 4)                // sre_data: the ERROR chunk's cause TLV start
}

func snStreamReset(flags uint16, streams ...uint16) []byte {
	ne := binary.NativeEndian
	b := snHeader(kernelSNStreamReset, flags, 12+2*len(streams))
	b = ne.AppendUint32(b, 0)
	for _, s := range streams {
		b = ne.AppendUint16(b, s)
	}
	return b
}

func TestParseKernelNotification(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want kernelNotification
		err  bool
	}{
		{name: "RFC 6458 §6.1.1 SCTP_ASSOC_CHANGE COMM_UP", in: snAssocChange(kernelCommUp, 0, 8, 8),
			want: kernelNotification{Type: kernelSNAssocChange, State: kernelCommUp, OutStreams: 8, InStreams: 8}},
		{name: "SCTP_ASSOC_CHANGE COMM_LOST with error", in: snAssocChange(kernelCommLost, 0x000c, 8, 8),
			want: kernelNotification{Type: kernelSNAssocChange, State: kernelCommLost, Error: 12, OutStreams: 8, InStreams: 8}},
		{name: "RFC 6458 §6.1.6 adaptation indication DDP (RFC 5043 §5.1)", in: snAdaptation(backend.AdaptationIndicationDDP),
			want: kernelNotification{Type: kernelSNAdaptation, Adaptation: 1}},
		{name: "RFC 6458 §6.1.3 remote error invalid stream", in: snRemoteError(1),
			want: kernelNotification{Type: kernelSNRemoteError, Cause: kernelCauseInvalidStream}},
		{name: "shutdown event", in: append(snHeader(kernelSNShutdown, 0, 12), 0, 0, 0, 0),
			want: kernelNotification{Type: kernelSNShutdown}},
		{name: "unknown type keeps header", in: append(snHeader(0x8009, 3, 12), 1, 2, 3, 4),
			want: kernelNotification{Type: 0x8009, Flags: 3}},
		{name: "shorter than header", in: []byte{1, 0x80, 0, 0}, err: true},
		{name: "length field beyond data", in: snHeader(kernelSNAssocChange, 0, 20), err: true},
		{name: "length field below header", in: snHeader(kernelSNShutdown, 0, 4), err: true},
		{name: "assoc change truncated", in: snAssocChange(kernelCommUp, 0, 1, 1)[:16], err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if tc.name == "assoc change truncated" {
				binary.NativeEndian.PutUint32(in[4:], uint32(len(in)))
			}
			got, err := parseKernelNotification(in)
			if tc.err {
				require.ErrorIs(t, err, errKernelNotification)
				return
			}
			require.NoError(t, err)
			got.resetList = nil
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseKernelNotificationStreamReset(t *testing.T) {
	// RFC 6458 §6.1.9 / RFC 6525 §6.1.1: strreset_stream_list.
	n, err := parseKernelNotification(snStreamReset(kernelResetIncomingSSN|kernelResetOutgoingSSN, 3, 65534))
	require.NoError(t, err)
	assert.Equal(t, uint16(kernelSNStreamReset), n.Type)
	assert.Equal(t, uint16(3), n.Flags)
	require.Equal(t, 2, n.ResetStreams())
	assert.Equal(t, uint16(3), n.ResetStream(0))
	assert.Equal(t, uint16(65534), n.ResetStream(1))

	// An odd trailing octet is ignored, not read past.
	b := append(snStreamReset(kernelResetDenied, 9), 0xff)
	binary.NativeEndian.PutUint32(b[4:], uint32(len(b)))
	n, err = parseKernelNotification(b)
	require.NoError(t, err)
	assert.Equal(t, 1, n.ResetStreams())
}

// cmsg builds one control message with the given level, type and data.
func cmsg(level, typ int32, data []byte) []byte {
	ne := binary.NativeEndian
	var b []byte
	if unix.SizeofCmsghdr == 16 {
		b = ne.AppendUint64(b, uint64(unix.CmsgLen(len(data))))
	} else {
		b = ne.AppendUint32(b, uint32(unix.CmsgLen(len(data))))
	}
	b = ne.AppendUint32(b, uint32(level))
	b = ne.AppendUint32(b, uint32(typ))
	b = append(b, data...)
	for len(b) < unix.CmsgSpace(len(data)) {
		b = append(b, 0)
	}
	return b
}

func sndrcvinfo(stream, flags uint16, ppidWire [4]byte) []byte {
	ne := binary.NativeEndian
	b := ne.AppendUint16(nil, stream)
	b = ne.AppendUint16(b, 0x1234) // sinfo_ssn
	b = ne.AppendUint16(b, flags)
	b = append(b, 0, 0)
	b = append(b, ppidWire[:]...) // sinfo_ppid exactly as on the wire
	return append(b, make([]byte, 20)...)
}

func TestParseKernelRcvInfo(t *testing.T) {
	unordered := sndrcvinfo(7, 1, [4]byte{0, 0, 0, 0x10}) // SCTP_UNORDERED, PPID 16 (RFC 5043 §5.2)
	info, ok := parseKernelRcvInfo(cmsg(unix.IPPROTO_SCTP, 1, unordered))
	require.True(t, ok)
	assert.Equal(t, kernelRcvInfo{Stream: 7, Flags: 1, PPID: 16}, info)

	// Another control message first, then SCTP_SNDRCV with PPID 17.
	oob := append(cmsg(unix.SOL_SOCKET, 1, []byte{1, 2, 3}), cmsg(unix.IPPROTO_SCTP, 1, sndrcvinfo(65533, 0, [4]byte{0, 0, 0, 0x11}))...)
	info, ok = parseKernelRcvInfo(oob)
	require.True(t, ok)
	assert.Equal(t, kernelRcvInfo{Stream: 65533, PPID: 17}, info)

	bad := []struct {
		name string
		oob  []byte
	}{
		{"empty", nil},
		{"other type only", cmsg(unix.IPPROTO_SCTP, 3, make([]byte, 20))},
		{"length beyond buffer", cmsg(unix.IPPROTO_SCTP, 1, unordered)[:20]},
		{"SNDRCV too short", cmsg(unix.IPPROTO_SCTP, 1, []byte{1, 2})},
	}
	for _, tc := range bad {
		_, ok := parseKernelRcvInfo(tc.oob)
		assert.False(t, ok, tc.name)
	}
	huge := cmsg(unix.IPPROTO_SCTP, 1, unordered)
	binary.NativeEndian.PutUint32(huge, 0xffffffff)
	_, ok = parseKernelRcvInfo(huge)
	assert.False(t, ok)
}

func TestAppendKernelSndInfo(t *testing.T) {
	// RFC 6458 §5.3.4 struct sctp_sndinfo; the PPID goes in network order
	// because Linux copies it to the DATA chunk unchanged (RFC 5043 §5.2:
	// 16 = DDP Segment, 17 = Session Control); SCTP_UNORDERED per §10.
	b := appendKernelSndInfo(nil, 0x0102, backend.PPIDControl, 1)
	require.Len(t, b, unix.CmsgSpace(16))
	want := cmsg(unix.IPPROTO_SCTP, 2, []byte{0, 0, 0, 0, 0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0})
	binary.NativeEndian.PutUint16(want[unix.SizeofCmsghdr:], 0x0102)
	binary.NativeEndian.PutUint16(want[unix.SizeofCmsghdr+2:], 1)
	assert.Equal(t, want, b)

	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() { buf = appendKernelSndInfo(buf[:0], 3, backend.PPIDSegment, 1) })
	assert.Zero(t, allocs)
}

func FuzzKernelNotification(f *testing.F) {
	f.Add(snAssocChange(kernelCommUp, 0, 8, 8))
	f.Add(snAdaptation(1))
	f.Add(snRemoteError(1))
	f.Add(snStreamReset(3, 1, 2, 3))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseKernelNotification(b)
		if err != nil {
			return
		}
		for i := 0; i < n.ResetStreams(); i++ {
			_ = n.ResetStream(i)
		}
		if uint32(len(b)) < binary.NativeEndian.Uint32(b[4:]) {
			t.Fatalf("accepted a notification longer than its buffer")
		}
	})
}

func FuzzKernelRcvInfo(f *testing.F) {
	f.Add(cmsg(unix.IPPROTO_SCTP, 1, sndrcvinfo(7, 1, [4]byte{0, 0, 0, 16})))
	f.Add(append(cmsg(unix.SOL_SOCKET, 1, []byte{1}), cmsg(unix.IPPROTO_SCTP, 1, sndrcvinfo(1, 0, [4]byte{0, 0, 0, 17}))...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		parseKernelRcvInfo(b)
	})
}

func sockaddrIn4(ip [4]byte, port uint16) []byte {
	b := binary.NativeEndian.AppendUint16(nil, unix.AF_INET)
	b = binary.BigEndian.AppendUint16(b, port)
	b = append(b, ip[:]...)
	return append(b, make([]byte, 8)...)
}

func sockaddrIn6(ip [16]byte, port uint16) []byte {
	b := binary.NativeEndian.AppendUint16(nil, unix.AF_INET6)
	b = binary.BigEndian.AppendUint16(b, port)
	b = append(b, 0, 0, 0, 0) // flowinfo
	b = append(b, ip[:]...)
	return append(b, 0, 0, 0, 0) // scope id
}

func TestParseKernelAddrs(t *testing.T) {
	// RFC 6458 §9.3/§9.4: packed sockaddrs after struct sctp_getaddrs.
	v6 := [16]byte{15: 1}
	b := append(sockaddrIn4([4]byte{127, 0, 0, 1}, 5000), sockaddrIn6(v6, 5000)...)
	a, err := parseKernelAddrs(b, 2)
	require.NoError(t, err)
	assert.Equal(t, 5000, a.Port)
	require.Len(t, a.IPAddrs, 2)
	assert.Equal(t, "127.0.0.1", a.IPAddrs[0].IP.String())
	assert.Equal(t, "::1", a.IPAddrs[1].IP.String())
	assert.Equal(t, "127.0.0.1/[::1]:5000", a.String())

	for name, tc := range map[string]struct {
		b []byte
		n uint32
	}{
		"count beyond data":   {sockaddrIn4([4]byte{1, 2, 3, 4}, 1), 2},
		"truncated sockaddr":  {sockaddrIn4([4]byte{1, 2, 3, 4}, 1)[:10], 1},
		"unknown family":      {append([]byte{9, 9}, make([]byte, 14)...), 1},
		"ports differ":        {append(sockaddrIn4([4]byte{1, 1, 1, 1}, 1), sockaddrIn4([4]byte{2, 2, 2, 2}, 2)...), 2},
		"one octet":           {[]byte{2}, 1},
		"huge count no bytes": {nil, 0xffffffff},
	} {
		_, err := parseKernelAddrs(tc.b, tc.n)
		assert.Error(t, err, name)
	}
}

func FuzzKernelAddrs(f *testing.F) {
	f.Add(sockaddrIn4([4]byte{127, 0, 0, 1}, 80), uint32(1))
	f.Add(append(sockaddrIn4([4]byte{10, 0, 0, 1}, 9), sockaddrIn6([16]byte{0: 0xfe, 1: 0x80}, 9)...), uint32(2))
	f.Fuzz(func(t *testing.T, b []byte, n uint32) {
		a, err := parseKernelAddrs(b, n)
		if err == nil && uint32(len(a.IPAddrs)) != n {
			t.Fatalf("%d addresses for addr_num %d", len(a.IPAddrs), n)
		}
	})
}
