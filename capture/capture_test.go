package capture

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/pcapread"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newFile(t *testing.T) (*Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.pcapng")
	w, err := create(path)
	require.NoError(t, err)
	return w, path
}

func udpSocket(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestPacketConn_RoundTrip: every datagram written and read through the
// recorder is in the file as IP/UDP with the sockets' addresses, an
// unspecified local address written as loopback.
func TestPacketConn_RoundTrip(t *testing.T) {
	w, path := newFile(t)
	a := udpSocket(t, "0.0.0.0:0")
	b := udpSocket(t, "127.0.0.1:0")
	pc := w.wrapPacketConn(a)
	bAddr := b.LocalAddr().(*net.UDPAddr)
	_, err := pc.WriteTo([]byte("to b"), bAddr)
	require.NoError(t, err)
	buf := make([]byte, 100)
	n, from, err := b.ReadFromUDP(buf)
	require.NoError(t, err)
	_, err = b.WriteToUDP(append([]byte("re: "), buf[:n]...), from)
	require.NoError(t, err)
	n, _, err = pc.ReadFrom(buf)
	require.NoError(t, err)
	assert.Equal(t, "re: to b", string(buf[:n]))
	require.NoError(t, w.Close())

	pkts, err := pcapread.ReadPackets(path)
	require.NoError(t, err)
	require.Len(t, pkts, 2)
	aPort := uint16(a.LocalAddr().(*net.UDPAddr).Port)
	local := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), aPort)
	assert.Equal(t, pcapread.Packet{Time: pkts[0].Time, Proto: protoUDP, Src: local, Dst: bAddr.AddrPort(), Payload: []byte("to b")}, pkts[0])
	assert.Equal(t, pcapread.Packet{Time: pkts[1].Time, Proto: protoUDP, Src: bAddr.AddrPort(), Dst: local, Payload: []byte("re: to b")}, pkts[1])
	assert.Equal(t, Stats{Packets: 2, Octets: 2*28 + 4 + 8}, w.Stats())
	_, ok := pc.(interface{ Unwrap() net.PacketConn })
	assert.True(t, ok)
}

func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server = <-ch
	require.NotNil(t, server)
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server
}

// TestConn_StreamsReassemble: the recorded segments of a TCP connection
// (handshake, data both ways in pieces larger than one packet, FIN)
// reassemble to exactly the bytes each side sent.
func TestConn_StreamsReassemble(t *testing.T) {
	w, path := newFile(t)
	cc, sc := tcpPair(t)
	c := w.Conn(cc, true)
	big := bytes.Repeat([]byte("0123456789abcdef"), 10000) // 160,000: three packets
	var got []byte
	done := make(chan error, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(sc, int64(len(big)+5)))
		got = b
		if err == nil {
			_, err = sc.Write([]byte("thanks"))
		}
		done <- err
	}()
	_, err := c.Write([]byte("hello"))
	require.NoError(t, err)
	// The writev path MPA takes (mpa.BuffersWriter): recorded whole even
	// though net.Buffers.WriteTo clears the slices it consumed.
	bw, ok := c.(interface {
		WriteBuffers(*net.Buffers) (int64, error)
	})
	require.True(t, ok)
	bufs := net.Buffers{big[:7], big[7:50000], big[50000:]}
	n, err := bw.WriteBuffers(&bufs)
	require.NoError(t, err)
	require.Equal(t, int64(len(big)), n)
	require.NoError(t, <-done)
	reply := make([]byte, 6)
	_, err = io.ReadFull(c, reply)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, w.Close())
	assert.Equal(t, append([]byte("hello"), big...), got)

	pkts, err := pcapread.ReadPackets(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(pkts), 3+4+1)
	assert.Equal(t, uint8(tcpSYN), pkts[0].Flags, "SYN first")
	assert.Equal(t, uint8(tcpSYN|tcpACK), pkts[1].Flags)
	assert.Equal(t, uint8(tcpFIN|tcpACK), pkts[len(pkts)-1].Flags)
	for _, p := range pkts {
		assert.LessOrEqual(t, len(p.Payload), maxSegment)
	}
	streams := pcapread.TCPStreams(pkts)
	l, r := addrPort(cc.LocalAddr()), addrPort(cc.RemoteAddr())
	assert.Equal(t, append([]byte("hello"), big...), streams[pcapread.TCPFlow{Src: l, Dst: r}])
	assert.Equal(t, []byte("thanks"), streams[pcapread.TCPFlow{Src: r, Dst: l}])
}

// TestSCTPRecorder_RFC9260_3_3_1: each message is one DATA chunk with its
// stream, PPID and U flag and a valid CRC32c; a message above 64 KiB is
// fragmented with the B and E bits; TSNs are consecutive per direction.
func TestSCTPRecorder_RFC9260_3_3_1(t *testing.T) {
	w, path := newFile(t)
	local, remote := netip.MustParseAddrPort("10.0.0.1:5000"), netip.MustParseAddrPort("10.0.0.2:6000")
	r := w.SCTP(local, remote)
	big := bytes.Repeat([]byte{7}, 100000)
	r.Record(true, 3, 17, true, []byte("initiate"))
	r.Record(false, 3, 17, true, []byte("accept"))
	r.Record(true, 3, 16, true, big)
	require.NoError(t, w.Close())
	pkts, err := pcapread.ReadPackets(path)
	require.NoError(t, err)
	require.Len(t, pkts, 4)
	type chunk struct {
		src  netip.AddrPort
		tsn  uint32
		ppid uint32
		b, e bool
		n    int
	}
	var got []chunk
	var joined []byte
	for _, p := range pkts {
		require.Equal(t, uint8(protoSCTP), p.Proto)
		require.True(t, wire.ChecksumOK(p.Payload), "CRC32c")
		pk, err := wire.ParsePacket(p.Payload)
		require.NoError(t, err)
		it := pk.Chunks()
		c, ok := it.Next()
		require.True(t, ok)
		d, err := wire.ParseData(c)
		require.NoError(t, err)
		assert.True(t, d.Unordered)
		assert.Equal(t, uint16(3), d.StreamID)
		got = append(got, chunk{p.Src, d.TSN, d.PPID, d.Beginning, d.Ending, len(d.UserData)})
		if d.PPID == 16 {
			joined = append(joined, d.UserData...)
		}
	}
	assert.Equal(t, []chunk{
		{local, 1, 17, true, true, 8},
		{remote, 1, 17, true, true, 6},
		{local, 2, 16, true, false, maxDataPerChunk},
		{local, 3, 16, false, true, 100000 - maxDataPerChunk},
	}, got)
	assert.Equal(t, big, joined)
}

// TestWriter_ConcurrentAndClose: records from many goroutines while the
// writer closes: no panic or race, every record written or counted as
// dropped.
func TestWriter_ConcurrentAndClose(t *testing.T) {
	w, path := newFile(t)
	r := w.SCTP(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"))
	var wg sync.WaitGroup
	const workers, each = 8, 200
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				r.Record(true, uint16(i), 16, true, []byte{byte(j)})
				if i == 0 && j == each/2 {
					require.NoError(t, w.Close())
				}
			}
		}()
	}
	wg.Wait()
	st := w.Stats()
	assert.Equal(t, uint64(workers*each), st.Packets+st.Dropped)
	assert.Positive(t, st.Dropped)
	pkts, err := pcapread.ReadPackets(path)
	require.NoError(t, err)
	assert.Len(t, pkts, int(st.Packets))
	r.Record(true, 1, 16, true, []byte{1})
	assert.Equal(t, st.Dropped+1, w.Stats().Dropped, "a record after Close is dropped")
}

// TestRecord_NoAllocation: the data path allocates nothing per packet in
// steady state.
func TestRecord_NoAllocation(t *testing.T) {
	w, err := NewWriter(io.Discard)
	require.NoError(t, err)
	src, dst := netip.MustParseAddrPort("127.0.0.1:9899"), netip.MustParseAddrPort("127.0.0.1:9900")
	payload := make([]byte, 1400)
	r := w.SCTP(src, dst)
	// Warm up: the records in circulation (at most the queue's slots)
	// get their buffers once; later records reuse them.
	for range queueSlots + 1 {
		r.Record(true, 1, 16, true, payload) // the largest of the three records
		require.NoError(t, w.Flush())
	}
	require.NoError(t, w.Flush())
	assert.Zero(t, testing.AllocsPerRun(1000, func() { w.recordUDP(src, dst, payload) }), "UDP")
	require.NoError(t, w.Flush())
	assert.Zero(t, testing.AllocsPerRun(1000, func() { w.recordTCP(src, dst, 1, 2, tcpACK|tcpPSH, payload) }), "TCP")
	require.NoError(t, w.Flush())
	parts := [][]byte{payload[:16], payload[16:]} // as the kernel backend passes them
	assert.Zero(t, testing.AllocsPerRun(1000, func() { r.Record(true, 1, 16, true, parts...) }), "SCTP")
	require.NoError(t, w.Close())
}

// TestReadClassicPcap reads the siw rping capture (classic pcap, Ethernet)
// that interop/siw and mpa use.
func TestReadClassicPcap(t *testing.T) {
	streams, err := pcapread.ReadTCPStreams(filepath.Join("..", "mpa", "testdata", "rping-siw.pcap"))
	require.NoError(t, err)
	require.Len(t, streams, 2)
	for fl, b := range streams {
		assert.NotEmpty(t, b, "%v", fl)
		if fl.Dst.Port() == 7174 {
			assert.True(t, strings.HasPrefix(string(b), "MPA ID Req Frame"), "the Initiator's stream starts with its MPA Request")
		}
	}
}

// ensureTshark installs tshark with the project's script (idempotent); a
// machine where that fails fails the test.
func ensureTshark(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("full tier only (make test): needs tshark from apt")
	}
	out, err := exec.Command(filepath.Join("..", "scripts", "tshark-setup.sh")).CombinedOutput()
	require.NoError(t, err, "scripts/tshark-setup.sh: %s", out)
}

// tsharkFields runs tshark over path and prints fields of the frames
// matching filter, one line per frame.
func tsharkFields(t *testing.T, path, filter string, extra []string, fields ...string) []string {
	t.Helper()
	args := append([]string{"-r", path, "-Y", filter, "-T", "fields"}, extra...)
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command("tshark", args...)
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	s := strings.TrimSpace(string(out))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// TestTshark_DecodesEachRecorder: tshark opens the files without
// configuration: SCTP over UDP on the RFC 6951 port decodes as SCTP, the
// kernel recorder's packets as SCTP DATA with PPID 16 and a good CRC32c,
// and none is malformed.
func TestTshark_DecodesEachRecorder(t *testing.T) {
	ensureTshark(t)
	w, path := newFile(t)
	a := udpSocket(t, "127.0.0.1:0")
	// Nothing listens on 9899: the datagram is recorded as sent.
	to := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:9899"))
	pkt := wire.AppendHeader(nil, wire.Header{SrcPort: 5000, DstPort: 5000})
	pkt = (&wire.Data{Unordered: true, Beginning: true, Ending: true, TSN: 1, StreamID: 1, PPID: 16, UserData: []byte("ddp")}).Append(pkt)
	wire.SetChecksum(pkt)
	_, err := w.wrapPacketConn(a).WriteTo(pkt, to)
	require.NoError(t, err)
	r := w.SCTP(netip.MustParseAddrPort("127.0.0.1:5001"), netip.MustParseAddrPort("127.0.0.1:5002"))
	r.Record(true, 2, 16, true, []byte("segment"))
	r.Record(false, 2, 17, true, []byte("control"))
	require.NoError(t, w.Close())

	verify := []string{"-o", "sctp.checksum:crc-32c"}
	lines := tsharkFields(t, path, "sctp.data_payload_proto_id == 16", verify, "udp.dstport", "sctp.data_sid", "sctp.checksum.status")
	assert.Equal(t, []string{"9899\t0x0001\t1", "\t0x0002\t1"}, lines, "UDP-encapsulated and kernel-recorded DATA, checksum status 1 = good")
	assert.Len(t, tsharkFields(t, path, "sctp.data_payload_proto_id == 17", verify, "sctp.data_sid"), 1)
	assert.Empty(t, tsharkFields(t, path, "_ws.malformed || _ws.expert.severity >= warning", verify, "frame.number"))
}
