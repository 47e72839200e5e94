package pion

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPion_MaxMessageFromMTU(t *testing.T) {
	// IPv4, MTU 1500: pion packet 1472, message floor4(1472−28) = 1444.
	assert.Equal(t, 1472, pionPacketSize(1500, udpAddr("192.0.2.1")))
	assert.Equal(t, 1444, maxMessageForPacket(1472))
	// IPv6, MTU 1500: 1452 → 1424.
	assert.Equal(t, 1452, pionPacketSize(1500, udpAddr("2001:db8::1")))
	assert.Equal(t, 1424, maxMessageForPacket(1452))
	// Loopback default: pion's 8192-octet ceiling → 8164.
	assert.Equal(t, 8192, pionPacketSize(0, udpAddr("127.0.0.1")))
	assert.Equal(t, 8164, maxMessageForPacket(8192))
	assert.Equal(t, 1472, pionPacketSize(0, udpAddr("192.0.2.1")))
	assert.Equal(t, 8192, pionPacketSize(65536, udpAddr("127.0.0.1")))
}

func udpAddr(ip string) *net.UDPAddr { return &net.UDPAddr{IP: net.ParseIP(ip), Port: 1} }
