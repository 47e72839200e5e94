package siw

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/internal/pcapread"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
)

// perftestPcap is a capture of siw on both ends of perftest 4.5-0.17 in
// the siw VM (ib_{write,read,send}_bw -R -d siw0 -s 4096 -n 5 -F, server
// ports 18601, 18602, 18603; enhanced MPA revision 2, no CRC). The read
// run's clock calibration failed (r² < 0.9), so its report fields are 0.
const perftestPcap = "testdata/perftest-siw.pcap"

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

// TestDest_WireImage: struct pingpong_dest as ib_write_bw's client sent it
// (big-endian fields, 4 padding octets after rkey, GID = dummy0's MAC).
func TestDest_WireImage(t *testing.T) {
	wire := unhex(t, "00000000 00000001 00000003 001905d6 5e2b2600 00000000 00005571072ab000"+
		"6e9c12109fb600000000000000000000 00000000 00000000")
	want := Dest{OutReads: 1, QPN: 3, PSN: 0x1905d6, RKey: 0x5e2b2600, VAddr: 0x5571072ab000,
		GID: [16]byte{0x6e, 0x9c, 0x12, 0x10, 0x9f, 0xb6}}
	d, n, err := ParseDest(wire)
	require.NoError(t, err)
	assert.Equal(t, DestLen, n)
	assert.Equal(t, want, d)
	assert.Equal(t, wire, d.Append(nil))
	assert.Equal(t, DestLen, d.Len())

	// The closing handshake carried stack garbage in the padding.
	garbage := bytes.Clone(wire)
	copy(garbage[20:], []byte{0x71, 0x55, 0, 0})
	d2, _, err := ParseDest(garbage)
	require.NoError(t, err)
	assert.Equal(t, want, d2, "padding is ignored")

	neg := Dest{GIDIndex: -1}.Append(nil)
	d3, _, err := ParseDest(neg)
	require.NoError(t, err)
	assert.Equal(t, int32(-1), d3.GIDIndex)

	for _, l := range []int{0, 55, 57} {
		_, _, err := ParseDest(make([]byte, l))
		assert.ErrorIs(t, err, ErrPerftestMsg)
	}
	b := make([]byte, 0, DestLen)
	assert.Zero(t, testing.AllocsPerRun(100, func() { b = want.Append(b[:0]) }))
}

// TestPerftestMessages: the other control messages, with the images siw's
// perftest put on the wire.
func TestPerftestMessages(t *testing.T) {
	t.Run("version", func(t *testing.T) {
		wire := unhex(t, "362e3036000000000000000000000000")
		assert.Equal(t, wire, AppendVersion(nil, PerftestVersion))
		s, v, err := ParseVersion(wire)
		require.NoError(t, err)
		assert.Equal(t, "6.06", s)
		assert.InDelta(t, 6.06, v, 1e-9)
		for _, bad := range [][]byte{wire[:15], append(bytes.Clone(wire), 0), AppendVersion(nil, "x"), AppendVersion(nil, "")} {
			_, _, err := ParseVersion(bad)
			assert.ErrorIs(t, err, ErrPerftestMsg, "%q", bad)
		}
		// 16 octets without a NUL, as a longer string would be cut.
		assert.Len(t, AppendVersion(nil, "1234567890123456789"), VersionLen)
		_, v, err = ParseVersion([]byte("5.33000000000000"))
		require.NoError(t, err)
		assert.InDelta(t, 5.33, v, 1e-9)
	})
	t.Run("int", func(t *testing.T) {
		for _, tc := range []struct {
			v    int32
			wire string
		}{{4096, "00001000"}, {64, "00000040"}, {-1, "ffffffff"}} {
			assert.Equal(t, unhex(t, tc.wire), AppendInt(nil, tc.v))
			v, err := ParseInt(unhex(t, tc.wire))
			require.NoError(t, err)
			assert.Equal(t, tc.v, v)
		}
		_, err := ParseInt([]byte{1, 2, 3})
		assert.ErrorIs(t, err, ErrPerftestMsg)
	})
	t.Run("mtu", func(t *testing.T) {
		assert.Equal(t, []byte("3\x00"), AppendMTU(nil, 3))
		assert.Equal(t, []byte("12"), AppendMTU(nil, 123), "cut to 2 octets like sprintf into char[2]")
		for _, tc := range []struct {
			wire string
			mtu  int
			ok   bool
		}{{"3\x00", 3, true}, {"5\x00", 5, true}, {"9\x00", 9, false}, {"\x00\x00", 0, false}, {"ab", 0, false}} {
			mtu, ok, err := ParseMTU([]byte(tc.wire))
			require.NoError(t, err)
			assert.Equal(t, tc.mtu, mtu, "%q", tc.wire)
			assert.Equal(t, tc.ok, ok, "%q", tc.wire)
		}
		_, _, err := ParseMTU([]byte("3"))
		assert.ErrorIs(t, err, ErrPerftestMsg)
	})
	t.Run("report", func(t *testing.T) {
		// ib_write_bw's client, which printed
		// "4096 5 29.22 6.85 0.001754".
		wire := [5][]byte{unhex(t, "0000000000001000"), unhex(t, "0000000000000005"),
			unhex(t, "403d38dbf9bad02e"), unhex(t, "401b6738120501d2"), unhex(t, "3f5cbbfd84955d2f")}
		r, err := ParseReport(wire)
		require.NoError(t, err)
		assert.Equal(t, uint64(4096), r.Size)
		assert.Equal(t, uint64(5), r.Iters)
		assert.InDelta(t, 29.22, r.BWPeak, 0.005)
		assert.InDelta(t, 6.85, r.BWAvg, 0.005)
		assert.InDelta(t, 0.001754, r.MsgRate, 0.0000005)
		assert.Equal(t, wire, r.Fields())
		wire[3] = wire[3][:7]
		_, err = ParseReport(wire)
		assert.ErrorIs(t, err, ErrPerftestMsg)
	})
	t.Run("credit", func(t *testing.T) {
		assert.Equal(t, unhex(t, "02000000"), AppendCredit(nil, 2))
		n, err := ParseCredit(unhex(t, "04000000"))
		require.NoError(t, err)
		assert.Equal(t, uint32(4), n)
		_, err = ParseCredit(nil)
		assert.ErrorIs(t, err, ErrPerftestMsg)
	})
}

// FuzzParsePerftest feeds whatever a peer could send on the control
// connection to every parser: none may panic, and what parses must
// re-encode to the same octets (modulo pingpong_dest padding and the
// version's bytes after its NUL).
func FuzzParsePerftest(f *testing.F) {
	f.Add(AppendVersion(nil, PerftestVersion))
	f.Add(Dest{RKey: 1, VAddr: 2, OutReads: 128}.Append(nil))
	f.Add(AppendMTU(nil, 3))
	f.Add(AppendInt(nil, 4096))
	f.Add(Report{BWAvg: 1.5}.Fields()[3])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, n, err := ParseDest(b); err == nil {
			want := bytes.Clone(b)
			clear(want[20:24])
			if n != DestLen || !bytes.Equal(d.Append(nil), want) {
				t.Fatalf("dest round trip %x -> %+v", b, d)
			}
		}
		if s, v, err := ParseVersion(b); err == nil {
			if math.IsNaN(v) || math.IsInf(v, 0) || strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("version %q -> %q %v", b, s, v)
			}
			if i := bytes.IndexByte(b, 0); i >= 0 && s != string(b[:i]) || i < 0 && s != string(b) {
				t.Fatalf("version %q -> %q", b, s)
			}
		}
		if v, err := ParseInt(b); err == nil && !bytes.Equal(AppendInt(nil, v), b) {
			t.Fatalf("int round trip %x", b)
		}
		if mtu, ok, err := ParseMTU(b); err == nil && ok && (mtu < 1 || mtu > 5) {
			t.Fatalf("mtu %q -> %d", b, mtu)
		}
		if v, err := ParseReportField(b); err == nil && binary.BigEndian.Uint64(b) != v {
			t.Fatalf("report field %x -> %x", b, v)
		}
		if v, err := ParseCredit(b); err == nil && !bytes.Equal(AppendCredit(nil, v), b) {
			t.Fatalf("credit round trip %x", b)
		}
	})
}

// tcpFlows returns the reassembled TCP payload of each flow (source port,
// destination port) of a capture (package capture reads pcap and pcapng).
func tcpFlows(t *testing.T, path string) map[[2]uint16][]byte {
	t.Helper()
	streams, err := pcapread.ReadTCPStreams(path)
	require.NoError(t, err)
	out := map[[2]uint16][]byte{}
	for fl, b := range streams {
		out[[2]uint16{fl.Src.Port(), fl.Dst.Port()}] = b
	}
	return out
}

// sends returns the payloads of the Send messages among ULPDUs (one
// segment each: perftest's control messages are tiny).
func sends(t *testing.T, us [][]byte) [][]byte {
	t.Helper()
	var out [][]byte
	for _, u := range us {
		if u[0]&0x80 != 0 {
			continue
		}
		h, n, err := iwarpwire.ParseDDPUntaggedHeader(u)
		require.NoError(t, err)
		if h.QN == iwarpwire.RDMAPQNSend {
			out = append(out, u[n:])
		}
	}
	return out
}

func lengths(msgs [][]byte) []int {
	out := make([]int, len(msgs))
	for i, m := range msgs {
		out[i] = len(m)
	}
	return out
}

// perftestSequence is the control message sequence of one run, the same
// both ways: version, cycle_buffer, cache_line_size, MTU, the handshakes
// before and after the rdma_cm data connection, the pingpong_dest and the
// pre-traffic handshakes, (Write/Read) the post-traffic handshake and the
// five report fields, the closing handshake.
func perftestSequence(v Verb) []int {
	s := []int{VersionLen, IntLen, IntLen, MTULen, DestLen, DestLen, DestLen}
	for range v.preTrafficHandshakes() {
		s = append(s, DestLen)
	}
	if v != VerbSend {
		s = append(s, DestLen, 8, 8, 8, 8, 8)
	}
	return append(s, DestLen)
}

type capturedRun struct {
	cliCtrl, srvCtrl [][]byte // Sends on the control connection
	cliData, srvData [][]byte // ULPDUs on the data connection
}

// perftestCapture splits the capture's run on server port into its two
// connections (the control one starts with the 16-octet version Send).
func perftestCapture(t *testing.T, flows map[[2]uint16][]byte, port uint16) capturedRun {
	t.Helper()
	var r capturedRun
	n := 0
	for k, b := range flows {
		if k[1] != port {
			continue
		}
		n++
		cli, srv := ulpdus(t, b), ulpdus(t, flows[[2]uint16{k[1], k[0]}])
		if s := sends(t, cli); len(s) > 0 && len(s[0]) == VersionLen {
			r.cliCtrl, r.srvCtrl = s, sends(t, srv)
		} else {
			r.cliData, r.srvData = cli, srv
		}
	}
	require.Equal(t, 2, n, "port %d: a control and a data connection", port)
	return r
}

// TestCapture_Perftest checks our reading of perftest's protocol against
// what siw's perftest put on the wire: the message sequence, the meaning of
// the pingpong_dest fields (the data connection's Writes, Read Requests and
// credit Writes use them) and the report fields.
func TestCapture_Perftest(t *testing.T) {
	flows := tcpFlows(t, perftestPcap)
	for _, tc := range []struct {
		v    Verb
		port uint16
	}{{VerbWrite, 18601}, {VerbRead, 18602}, {VerbSend, 18603}} {
		t.Run(tc.v.String(), func(t *testing.T) {
			r := perftestCapture(t, flows, tc.port)
			assert.Equal(t, perftestSequence(tc.v), lengths(r.cliCtrl))
			assert.Equal(t, perftestSequence(tc.v), lengths(r.srvCtrl))
			ver, _, err := ParseVersion(r.cliCtrl[0])
			require.NoError(t, err)
			assert.Equal(t, PerftestVersion, ver)
			cli, _, err := ParseDest(r.cliCtrl[6])
			require.NoError(t, err)
			srv, _, err := ParseDest(r.srvCtrl[6])
			require.NoError(t, err)
			for i := 7; i < len(r.cliCtrl); i++ {
				if len(r.cliCtrl[i]) == DestLen {
					d, _, _ := ParseDest(r.cliCtrl[i])
					assert.Equal(t, cli, d, "client handshake %d", i+1)
				}
			}
			var tagged, sendsN int
			var credits []uint32
			switch tc.v {
			case VerbWrite:
				for _, u := range r.cliData {
					h, n, err := iwarpwire.ParseDDPTaggedHeader(u)
					require.NoError(t, err)
					assert.Equal(t, iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), h.RsvdULP)
					assert.Equal(t, srv.RKey, h.STag, "Writes go to the server's rkey")
					assert.Equal(t, srv.VAddr, h.TO, "at its vaddr")
					assert.Len(t, u[n:], 4096)
					tagged++
				}
				assert.Equal(t, uint32(1), cli.OutReads)
			case VerbRead:
				assert.Equal(t, uint32(128), cli.OutReads)
				for _, u := range r.cliData {
					h, n, err := iwarpwire.ParseDDPUntaggedHeader(u)
					require.NoError(t, err)
					require.Equal(t, uint32(iwarpwire.RDMAPQNReadRequest), h.QN)
					rr, err := parseReadRequest(u[n:])
					require.NoError(t, err)
					assert.Equal(t, srv.RKey, rr.SrcSTag, "Reads of the server's rkey")
					assert.Equal(t, srv.VAddr, rr.SrcTO)
					assert.Equal(t, cli.RKey, rr.SinkSTag, "into the client's own buffer")
					assert.Equal(t, uint32(4096), rr.Size)
					tagged++
				}
			case VerbSend:
				assert.Len(t, sends(t, r.cliData), 5)
				for _, s := range sends(t, r.cliData) {
					assert.Equal(t, sends(t, r.cliData)[0], s, "every Send from the same buffer")
					sendsN++
				}
				for _, u := range r.srvData {
					h, n, err := iwarpwire.ParseDDPTaggedHeader(u)
					require.NoError(t, err)
					assert.Equal(t, cli.RKey, h.STag, "credits go to the client's credit word")
					assert.Equal(t, cli.VAddr, h.TO)
					c, err := ParseCredit(u[n:])
					require.NoError(t, err)
					credits = append(credits, c)
				}
				assert.Equal(t, []uint32{2, 4}, credits, "rx depth 6: a credit every 6/3 receives")
			}
			if tc.v != VerbSend {
				assert.Equal(t, 5, tagged)
				var f [5][]byte
				copy(f[:], r.cliCtrl[10:15])
				rep, err := ParseReport(f)
				require.NoError(t, err)
				assert.Equal(t, uint64(4096), rep.Size)
				assert.Equal(t, uint64(5), rep.Iters)
			}
		})
	}
}

// tapListener records the octets of each accepted connection, both ways.
type tapListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*tapConn
}

type tapConn struct {
	net.Conn
	mu     sync.Mutex
	rx, tx []byte
}

func (c *tapConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	c.rx = append(c.rx, b[:n]...)
	c.mu.Unlock()
	return n, err
}

func (c *tapConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.mu.Lock()
	c.tx = append(c.tx, b[:n]...)
	c.mu.Unlock()
	return n, err
}

func (l *tapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &tapConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, tc)
	l.mu.Unlock()
	return tc, nil
}

// TestPerftest_Loopback runs our client against our server for each verb
// and checks that the control connection carries the message sequence
// siw's perftest uses (TestCapture_Perftest).
func TestPerftest_Loopback(t *testing.T) {
	for _, tc := range []struct {
		v     Verb
		size  int
		iters int
		cqMod int // 0: perftest's 100, clamped to the tx depth
		// outReads: ib_read_bw's outstanding Reads (0: 128), which also
		// bound the client's Read sink slots and so its depth.
		outReads int
	}{
		{VerbWrite, 65536, 50, 0, 0}, {VerbRead, 65536, 50, 0, 0}, {VerbSend, 65536, 50, 0, 0}, {VerbSend, 100, 300, 0, 0}, {VerbRead, 3000, 40, 0, 0},
		// cq_mod not dividing the iterations, and every one signaled.
		{VerbWrite, 4096, 300, 7, 0}, {VerbRead, 3000, 300, 7, 0}, {VerbSend, 100, 1000, 7, 0}, {VerbWrite, 4096, 100, 1, 0}, {VerbRead, 3000, 100, 1, 0},
		// A depth (16 Read slots) below cq_mod: one completion per 16.
		{VerbRead, 3000, 300, 50, 16},
	} {
		t.Run(fmt.Sprintf("%v/cq_mod=%d", tc.v, tc.cqMod), func(t *testing.T) {
			cfg := PerftestConfig{Verb: tc.v, Size: tc.size, Iters: tc.iters, CQMod: tc.cqMod, OutReads: tc.outReads, MPA: mpa.Config{NoCRC: true}}
			st, cl := runPerftestLoopback(t, cfg, cfg)
			// Every CQMod-th work request and the last ask for a
			// completion (the depth, at most the tx depth of 128 and for
			// Reads the outstanding Reads, clamps CQMod; the iterations
			// bound the tx depth); Sends also the last before each wait
			// for credits.
			mod := min(cmp.Or(tc.cqMod, 100), 128, tc.iters, cmp.Or(tc.outReads, 128))
			signaled := (tc.iters + mod - 1) / mod
			if tc.v == VerbSend {
				assert.GreaterOrEqual(t, cl.Completions, signaled)
				assert.LessOrEqual(t, cl.Completions, tc.iters)
			} else {
				assert.Equal(t, signaled, cl.Completions, "completions taken: one per %d work requests", mod)
			}
			assert.Equal(t, tc.iters, cl.Iters)
			assert.Equal(t, int64(tc.iters*tc.size), cl.Bytes)
			assert.Equal(t, tc.iters, st.Iters)
			assert.Equal(t, PerftestVersion, cl.PeerVersion)
			assert.Equal(t, PerftestVersion, st.PeerVersion)
			assert.Positive(t, cl.BWAvg)
			switch tc.v {
			case VerbRead:
				assert.Equal(t, tc.iters, cl.Verified)
				assert.Equal(t, uint16(cmp.Or(tc.outReads, 128)), cl.Data.ORD)
			case VerbSend:
				assert.Equal(t, tc.iters, st.Verified)
				every := max(1, min(tc.iters, 512)/4)
				assert.Equal(t, (tc.iters+every-1)/every, st.Credits, "a credit every rx depth/4 receives and at the end")
			case VerbWrite:
				assert.Equal(t, 1, st.Verified)
			}
			if tc.v != VerbSend {
				require.NotNil(t, st.PeerReport)
				assert.Equal(t, cl.BWAvg, st.PeerReport.BWAvg, "the server gets the client's figures")
				assert.Equal(t, uint64(tc.iters), st.PeerReport.Iters)
			}
		})
	}
}

// runPerftestLoopback runs PerftestServe(srv) and PerftestClient(cli) on
// 127.0.0.1 and checks the control connection's message sequence.
func runPerftestLoopback(t *testing.T, srv, cli PerftestConfig) (PerftestResult, PerftestResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tap := &tapListener{Listener: tl}
	ln, err := mpa.NewListener(tap, PerftestListenConfig(srv.MPA, srv))
	require.NoError(t, err)
	defer ln.Close()
	type result struct {
		r   PerftestResult
		err error
	}
	res := make(chan result, 1)
	go func() {
		r, err := PerftestServe(ctx, ln, srv)
		res <- result{r, err}
	}()
	cl, err := PerftestClient(ctx, ln.Addr().String(), cli)
	sr := <-res
	require.NoError(t, err, "client (server: %v)", sr.err)
	require.NoError(t, sr.err, "server")
	tap.mu.Lock()
	defer tap.mu.Unlock()
	require.Len(t, tap.conns, 2)
	c := tap.conns[0]
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Equal(t, perftestSequence(cli.Verb), lengths(sends(t, ulpdus(t, c.rx))), "client's control messages")
	assert.Equal(t, perftestSequence(cli.Verb), lengths(sends(t, ulpdus(t, c.tx))), "server's control messages")
	return sr.r, cl
}

// mismatchedRun runs our perftest server with srv against our client with
// cli on loopback and returns both errors.
func mismatchedRun(t *testing.T, srv, cli PerftestConfig) (serr, cerr error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln, err := mpa.Listen("tcp", "127.0.0.1:0", PerftestListenConfig(srv.MPA, srv))
	require.NoError(t, err)
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := PerftestServe(ctx, ln, srv)
		errc <- err
	}()
	_, cerr = PerftestClient(ctx, ln.Addr().String(), cli)
	return <-errc, cerr
}

// TestPerftest_PeerErrors: a peer that breaks the run fails it with a
// message that says where.
func TestPerftest_PeerErrors(t *testing.T) {
	t.Run("send-larger-than-posted", func(t *testing.T) {
		srv := PerftestConfig{Verb: VerbSend, Size: 1000, Iters: 10, MPA: mpa.Config{NoCRC: true}}
		cli := srv
		cli.Size = 2000
		serr, cerr := mismatchedRun(t, srv, cli)
		require.Error(t, serr)
		assert.Contains(t, serr.Error(), "perftest send: waiting for Send 1 of 10")
		require.Error(t, cerr)
		t.Logf("server: %v\nclient: %v", serr, cerr)
	})
	t.Run("iteration-mismatch", func(t *testing.T) {
		srv := PerftestConfig{Verb: VerbWrite, Size: 1000, Iters: 10, MPA: mpa.Config{NoCRC: true}}
		cli := srv
		cli.Iters = 5
		serr, cerr := mismatchedRun(t, srv, cli)
		assert.ErrorIs(t, serr, ErrPerftestMsg)
		assert.Contains(t, serr.Error(), "the client reports 5 × 1000 octets, this server expects 10 × 1000")
		require.Error(t, cerr, "the server hangs up instead of the closing handshake")
	})
}
