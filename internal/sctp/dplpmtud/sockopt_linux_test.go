//go:build linux

package dplpmtud

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/pmtu"
)

// TestParseSCTPStatus decodes a struct sctp_status image laid out as
// Linux's include/uapi/linux/sctp.h (offsets checked with gcc: size 176,
// fragmentation_point at 20, primary at 24, spinfo_mtu at 148 of it).
func TestParseSCTPStatus(t *testing.T) {
	b := make([]byte, sctpStatusLen)
	binary.NativeEndian.PutUint32(b[20:], 1452)
	binary.NativeEndian.PutUint32(b[24+148:], 1500)
	s, err := parseSCTPStatus(b)
	require.NoError(t, err)
	assert.Equal(t, sctpStatusInfo{FragmentationPoint: 1452, PathMTU: 1500}, s)
	_, err = parseSCTPStatus(b[:100])
	assert.ErrorIs(t, err, ErrShort)
}

// TestTCPMaxSegLoopback reads TCP_MAXSEG of a loopback connection.
func TestTCPMaxSegLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	done := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		done <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	if sc := <-done; sc != nil {
		defer sc.Close()
	}
	rc, err := c.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	mss, err := TCPMaxSeg(rc)
	require.NoError(t, err)
	// Before data flows Linux may report half the loopback MSS.
	assert.Positive(t, mss)
	assert.LessOrEqual(t, mss, pmtu.TCPMSS(65536, false, 0))
	require.NoError(t, setDontFragment(rc, false, true), "IP_MTU_DISCOVER on TCP")
}

// TestPaddrinfoRequest builds the SCTP_GET_PEER_ADDR_INFO request image
// (struct sctp_paddrinfo, packed: sockaddr at offset 4, spinfo_mtu at 148).
func TestPaddrinfoRequest(t *testing.T) {
	b := appendPaddrinfoRequest(nil, netip.MustParseAddrPort("10.1.2.3:5000"))
	require.Len(t, b, paddrinfoLen)
	assert.Equal(t, uint16(2), binary.NativeEndian.Uint16(b[4:]), "AF_INET")
	assert.Equal(t, []byte{0x13, 0x88, 10, 1, 2, 3}, b[6:12])
	b = appendPaddrinfoRequest(nil, netip.MustParseAddrPort("[fd00::1]:5000"))
	assert.Equal(t, uint16(10), binary.NativeEndian.Uint16(b[4:]), "AF_INET6")
	assert.Equal(t, byte(0xfd), b[12])
	assert.Equal(t, byte(1), b[27])
	binary.NativeEndian.PutUint32(b[148:], 1400)
	m, err := parsePaddrinfoMTU(b)
	require.NoError(t, err)
	assert.Equal(t, 1400, m)
	_, err = parsePaddrinfoMTU(b[:10])
	assert.ErrorIs(t, err, ErrShort)
}
