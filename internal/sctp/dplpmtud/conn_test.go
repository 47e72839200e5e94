package dplpmtud

import (
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/pmtu"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeNet is a datagram path with an MTU: datagrams whose IP size
// (UDP payload + 28) exceeds it vanish silently (a black hole). A fake
// SCTP peer answers probe HEARTBEATs with HEARTBEAT ACKs and records the
// other packets.
type fakeNet struct {
	mu      sync.Mutex
	mtu     int
	got     [][]byte
	toConn  chan []byte
	readErr error
	done    chan struct{}
	once    sync.Once
}

func newFakeNet(mtu int) *fakeNet {
	return &fakeNet{mtu: mtu, toConn: make(chan []byte, 64), done: make(chan struct{})}
}

func (n *fakeNet) setMTU(m int) { n.mu.Lock(); n.mtu = m; n.mu.Unlock() }

func (n *fakeNet) packets() [][]byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([][]byte(nil), n.got...)
}

type fakeConn struct{ n *fakeNet }

func (c fakeConn) Write(b []byte) (int, error) {
	n := c.n
	n.mu.Lock()
	fits := len(b)+pmtu.UDPHeaderLen+pmtu.IPv4HeaderLen <= n.mtu
	if fits && (len(b) < 13 || wire.ChunkType(b[12]) != wire.ChunkHeartbeat) {
		n.got = append(n.got, append([]byte(nil), b...))
	}
	n.mu.Unlock()
	if !fits {
		return len(b), nil
	}
	if len(b) > 12 && wire.ChunkType(b[12]) == wire.ChunkHeartbeat {
		ack := append([]byte(nil), b...)
		ack[12] = byte(wire.ChunkHeartbeatAck)
		wire.SetChecksum(ack)
		select {
		case n.toConn <- ack:
		case <-n.done:
		}
	}
	return len(b), nil
}

func (c fakeConn) Read(b []byte) (int, error) {
	c.n.mu.Lock()
	if err := c.n.readErr; err != nil {
		c.n.readErr = nil
		c.n.mu.Unlock()
		return 0, err
	}
	c.n.mu.Unlock()
	select {
	case p := <-c.n.toConn:
		return copy(b, p), nil
	case <-c.n.done:
		return 0, net.ErrClosed
	}
}

func (c fakeConn) Close() error                     { c.n.once.Do(func() { close(c.n.done) }); return nil }
func (c fakeConn) LocalAddr() net.Addr              { return &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1} }
func (c fakeConn) RemoteAddr() net.Addr             { return &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 2} }
func (c fakeConn) SetDeadline(time.Time) error      { return nil }
func (c fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (c fakeConn) SetWriteDeadline(time.Time) error { return nil }

// established writes a packet as pion would after the handshake, so the
// Conn learns the verification tag and starts probing.
func established(t *testing.T, c *Conn) {
	t.Helper()
	pkt := packet([2]int{3, 16}) // a SACK
	_, err := c.Write(pkt)
	require.NoError(t, err)
}

// reader drains Read like pion's read loop and collects what it gets.
func reader(c *Conn) (stop func() [][]byte) {
	var mu sync.Mutex
	var got [][]byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 9000)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, append([]byte(nil), buf[:n]...))
			mu.Unlock()
		}
	}()
	return func() [][]byte {
		_ = c.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// TestConnDiscoversAndHidesAcks: probing finds the path MTU; the stack
// above never sees a HEARTBEAT ACK of a probe but does see other packets.
func TestConnDiscoversAndHidesAcks(t *testing.T) {
	for _, mtu := range []int{1280, 1500, 8220} {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			n := newFakeNet(mtu)
			c, err := NewConn(fakeConn{n}, ConnConfig{Prober: ProberConfig{ProbeTimeout: 20 * time.Millisecond}})
			require.NoError(t, err)
			stop := reader(c)
			assert.Equal(t, DefaultBasePLPMTU, c.Path().MTU(), "starts at BASE_PLPMTU")
			established(t, c)
			require.Eventually(t, func() bool {
				return c.Path().MTU() == mtu && c.ProberState() == StateSearchComplete
			}, 5*time.Second, time.Millisecond)
			assert.Equal(t, pmtu.SCTPMaxMessage(mtu, false, true), c.MaxMessage())
			other := packet([2]int{3, 16})
			n.toConn <- other
			time.Sleep(20 * time.Millisecond)
			got := stop()
			require.Len(t, got, 1, "only the non-probe packet reaches the stack")
			assert.Equal(t, other, got[0])
			s := c.Stats()
			assert.Equal(t, s.ProbesSent, s.ProbesAcked+s.ProbesLost, "every probe acked or timed out")
			assert.False(t, c.IPv6())
		})
	}
}

// TestConnResplits: a packet larger than the path MTU is cut into packets
// that fit, chunks in order; a single oversized chunk goes out whole and
// is counted as Fragmentable.
func TestConnResplits(t *testing.T) {
	n := newFakeNet(1500)
	c, err := NewConn(fakeConn{n}, ConnConfig{NoProbing: true, Prober: ProberConfig{Max: 1500}})
	require.NoError(t, err)
	stop := reader(c)
	defer stop()
	assert.Equal(t, 1500, c.Path().MTU(), "without probing: the maximum")
	pkt := packet([2]int{3, 16}, [2]int{0, 700}, [2]int{0, 700}, [2]int{0, 700})
	_, err = c.Write(pkt)
	require.NoError(t, err)
	got := n.packets()
	require.Len(t, got, 2)
	assert.Equal(t, 12+16+700+700, len(got[0]))
	assert.Equal(t, 12+700, len(got[1]))
	n.setMTU(9000) // let the oversize piece through to observe it
	c.Path().Set(1200, SourceTooBig)
	big := packet([2]int{0, 1400})
	_, err = c.Write(big)
	require.NoError(t, err)
	got = n.packets()
	assert.Equal(t, big, got[len(got)-1])
	s := c.Stats()
	assert.Equal(t, uint64(2), s.Resplit)
	assert.Equal(t, uint64(1), s.Fragmentable)
}

// TestConnBlackHole_RFC8899Sec4_3: the path shrinks without any error
// report; probing notices, falls to the base and finds the new size.
func TestConnBlackHole_RFC8899Sec4_3(t *testing.T) {
	n := newFakeNet(8220)
	cfg := ConnConfig{Prober: ProberConfig{ProbeTimeout: 20 * time.Millisecond, ConfirmInterval: 50 * time.Millisecond}}
	c, err := NewConn(fakeConn{n}, cfg)
	require.NoError(t, err)
	stop := reader(c)
	defer stop()
	established(t, c)
	require.Eventually(t, func() bool { return c.Path().MTU() == 8220 }, 5*time.Second, time.Millisecond)
	n.setMTU(1280)
	t0 := time.Now()
	require.Eventually(t, func() bool {
		return c.Path().MTU() == 1280 && c.ProberState() == StateSearchComplete
	}, 5*time.Second, time.Millisecond)
	t.Logf("converged in %v", time.Since(t0))
	s := c.Stats()
	assert.Equal(t, uint64(1), s.BlackHoles)
	assert.GreaterOrEqual(t, s.ProbesLost, uint64(6))
}

// TestConnRetransmissionTriggersConfirmation: a DATA chunk sent again (a
// retransmission) in a packet above the base makes the prober confirm the
// PLPMTU at once, long before CONFIRMATION_TIMER.
func TestConnRetransmissionTriggersConfirmation(t *testing.T) {
	n := newFakeNet(1500)
	cfg := ConnConfig{Prober: ProberConfig{ProbeTimeout: 20 * time.Millisecond, ConfirmInterval: time.Hour}}
	c, err := NewConn(fakeConn{n}, cfg)
	require.NoError(t, err)
	stop := reader(c)
	defer stop()
	established(t, c)
	require.Eventually(t, func() bool { return c.ProberState() == StateSearchComplete }, 5*time.Second, time.Millisecond)
	n.setMTU(1280)
	data := packet([2]int{0, 1400})
	_, _ = c.Write(data)
	_, _ = c.Write(data) // same TSN: a retransmission
	require.Eventually(t, func() bool { return c.Path().MTU() == 1280 }, 5*time.Second, time.Millisecond)
}

// TestConnAbsorbsEMSGSIZE: the EMSGSIZE a connected UDP socket reports on
// read after an ICMP "fragmentation needed" never reaches the stack above
// (pion would end the association).
func TestConnAbsorbsEMSGSIZE(t *testing.T) {
	n := newFakeNet(1500)
	n.readErr = &net.OpError{Op: "read", Net: "udp", Err: os.NewSyscallError("recvmsg", syscall.EMSGSIZE)}
	c, err := NewConn(fakeConn{n}, ConnConfig{NoProbing: true})
	require.NoError(t, err)
	stop := reader(c)
	p := packet([2]int{3, 16})
	n.toConn <- p
	require.Eventually(t, func() bool { return c.Stats().TooBig == 1 }, 5*time.Second, time.Millisecond)
	got := stop()
	require.Len(t, got, 1)
	assert.Equal(t, p, got[0])
}

// TestConnKernelUDP runs on a real connected UDP socket over loopback:
// DF is set (IP_PMTUDISC_DO), IP_MTU is read, probes are answered by a
// peer echoing HEARTBEATs.
func TestConnKernelUDP(t *testing.T) {
	peer, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer peer.Close()
	go func() {
		buf := make([]byte, 65536)
		for {
			nr, from, err := peer.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if nr > 12 && wire.ChunkType(buf[12]) == wire.ChunkHeartbeat {
				buf[12] = byte(wire.ChunkHeartbeatAck)
				wire.SetChecksum(buf[:nr])
				_, _ = peer.WriteToUDP(buf[:nr], from)
			}
		}
	}()
	uc, err := net.DialUDP("udp", nil, peer.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	c, err := NewConn(uc, ConnConfig{})
	require.NoError(t, err)
	stop := reader(c)
	defer stop()
	rc, err := uc.SyscallConn()
	require.NoError(t, err)
	m, err := UDPPathMTU(rc, false)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, m, 65535, "loopback MTU")
	established(t, c)
	want := PionMaxPacket + pmtu.UDPHeaderLen + pmtu.IPv4HeaderLen
	require.Eventually(t, func() bool { return c.Path().MTU() == want }, 5*time.Second, time.Millisecond)
	_, err = TCPMaxSeg(rc)
	assert.Error(t, err, "TCP_MAXSEG on a UDP socket")
	_, err = kernelSCTPStatus(rc)
	assert.Error(t, err, "SCTP_STATUS on a UDP socket")
}
