package mpa

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is an llp.Handler that keeps copies of what it receives.
type recorder struct {
	segs   chan []byte
	closed chan error
	refuse int // refuse the n-th segment (1-based), 0: never
	n      int
}

func newRecorder() *recorder {
	return &recorder{segs: make(chan []byte, 1<<14), closed: make(chan error, 1)}
}

func (r *recorder) HandleSegment(seg []byte) error {
	r.n++
	r.segs <- bytes.Clone(seg)
	if r.n == r.refuse {
		return errors.New("refused")
	}
	return nil
}

func (r *recorder) HandleClosed(err error) { r.closed <- err }

func (r *recorder) next(t *testing.T) []byte {
	t.Helper()
	select {
	case s := <-r.segs:
		return s
	case err := <-r.closed:
		// HandleSegment always precedes HandleClosed: drain first.
		select {
		case s := <-r.segs:
			r.closed <- err
			return s
		default:
		}
		t.Fatalf("stream closed while waiting for a segment: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("timeout waiting for a segment")
	}
	return nil
}

func (r *recorder) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.closed:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("timeout waiting for HandleClosed")
	}
	return nil
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// teardown aborts c and waits for its receive goroutine, if started.
func teardown(t testing.TB, cs ...*Conn) {
	t.Cleanup(func() {
		for _, c := range cs {
			if c == nil {
				continue
			}
			_ = c.Abort()
			c.mu.Lock()
			started := c.started
			c.mu.Unlock()
			if started {
				<-c.Done()
			}
		}
	})
}

// pair connects an Initiator with ccfg to a Responder with scfg over
// loopback TCP.
func pair(t testing.TB, ccfg, scfg *Config) (*Conn, *Conn) {
	t.Helper()
	return pairWrapped(t, ccfg, scfg, func(nc net.Conn) net.Conn { return nc })
}

// pairWrapped is pair with the Initiator's TCP conn passed through wrap.
func pairWrapped(t testing.TB, ccfg, scfg *Config, wrap func(net.Conn) net.Conn) (*Conn, *Conn) {
	t.Helper()
	ln, err := Listen("tcp", "127.0.0.1:0", scfg)
	require.NoError(t, err)
	defer ln.Close()
	type res struct {
		c   *Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept(testCtx(t))
		ch <- res{c, err}
	}()
	var cli *Conn
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err == nil {
		cli, err = Client(testCtx(t), wrap(nc), ccfg)
	}
	r := <-ch
	require.NoError(t, err)
	require.NoError(t, r.err)
	teardown(t, cli, r.c)
	return cli, r.c
}

// rawPeer accepts one TCP connection on loopback and hands it to f in a
// goroutine; the returned function waits for f.
func rawPeer(t *testing.T, f func(nc net.Conn)) (addr string, wait func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ln.Close()
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		f(nc)
	}()
	return ln.Addr().String(), func() {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("raw peer did not finish")
		}
	}
}

// readFrameRaw reads one startup frame from nc.
func readFrameRaw(nc net.Conn) (Frame, error) {
	hdr := make([]byte, iwarpwire.MPAFrameHeaderLen)
	if _, err := io.ReadFull(nc, hdr); err != nil {
		return Frame{}, err
	}
	n, err := FrameLen(hdr)
	if err != nil {
		return Frame{}, err
	}
	b := append(hdr, make([]byte, n-iwarpwire.MPAFrameHeaderLen)...)
	if _, err := io.ReadFull(nc, b[iwarpwire.MPAFrameHeaderLen:]); err != nil {
		return Frame{}, err
	}
	f, _, err := ParseFrame(b)
	return f, err
}

func llpCode(t *testing.T, err error) uint8 {
	t.Helper()
	var le *llp.Error
	require.ErrorAs(t, err, &le)
	assert.Equal(t, uint8(iwarp.LLPETypeMPA), le.EType)
	return le.Code
}

// TestNegotiationMatrix runs revision 1 and enhanced revision 2 with every
// combination of CRC preference and Marker requirement (RFC 5044 §7.1.1:
// M per direction, declared by the receiver; C used if either asks) and
// checks data flows both ways.
func TestNegotiationMatrix(t *testing.T) {
	for _, enh := range []bool{false, true} {
		for _, cNoCRC := range []bool{false, true} {
			for _, sNoCRC := range []bool{false, true} {
				for _, cM := range []bool{false, true} {
					for _, sM := range []bool{false, true} {
						name := fmt.Sprintf("enh=%t/cliNoCRC=%t/srvNoCRC=%t/cliM=%t/srvM=%t", enh, cNoCRC, sNoCRC, cM, sM)
						t.Run(name, func(t *testing.T) {
							ccfg := &Config{Enhanced: enh, NoCRC: cNoCRC, Markers: cM, IRD: 4, ORD: 2, PrivateData: []byte("client")}
							scfg := &Config{NoCRC: sNoCRC, Markers: sM, IRD: 8, ORD: 8, PrivateData: []byte("server")}
							cli, srv := pair(t, ccfg, scfg)
							cp, sp := cli.Params(), srv.Params()
							wantRev := uint8(1)
							if enh {
								wantRev = 2
							}
							wantCRC := !cNoCRC || !sNoCRC
							assert.Equal(t, Params{
								Initiator: true, Revision: wantRev, Enhanced: enh, CRC: wantCRC,
								MarkersTx: sM, MarkersRx: cM,
								PrivateData: []byte("client"), PeerPrivateData: []byte("server"),
								IRD: 4, ORD: 2, PeerIRD: map[bool]uint16{true: 8}[enh], PeerORD: map[bool]uint16{true: 4}[enh],
							}, cp)
							assert.Equal(t, Params{
								Revision: wantRev, Enhanced: enh, CRC: wantCRC,
								MarkersTx: cM, MarkersRx: sM,
								PrivateData: []byte("server"), PeerPrivateData: []byte("client"),
								IRD: 8, ORD: map[bool]uint16{true: 4, false: 8}[enh], PeerIRD: map[bool]uint16{true: 4}[enh], PeerORD: map[bool]uint16{true: 2}[enh],
							}, sp)
							// RFC 5044 §4.5: MULPDU from the connection's EMSS,
							// with worst-case Markers where this end sends them.
							require.Positive(t, cli.mssVal)
							assert.Equal(t, iwarpwire.MPAMULPDU(cli.mssVal, sM), cli.MULPDU())
							assert.Equal(t, iwarpwire.MPAMULPDU(srv.mssVal, cM), srv.MULPDU())

							cr, sr := newRecorder(), newRecorder()
							cli.Start(cr)
							srv.Start(sr)
							for i := range 20 {
								msg := bytes.Repeat([]byte{byte(i)}, 100*i+1)
								require.NoError(t, cli.SendSegment(msg[:1], msg[1:]))
								assert.Equal(t, msg, sr.next(t))
								require.NoError(t, srv.SendSegment(nil, msg))
								assert.Equal(t, msg, cr.next(t))
							}
							require.NoError(t, cli.Close())
							require.NoError(t, sr.end(t))
							require.NoError(t, srv.Close())
							require.NoError(t, cr.end(t))
						})
					}
				}
			}
		}
	}
}

// TestManySegmentsRandomSizes sends segments of random sizes up to MULPDU
// in both directions with Markers and CRC, and checks order and content.
func TestManySegmentsRandomSizes(t *testing.T) {
	for _, mk := range []bool{false, true} {
		t.Run(fmt.Sprintf("markers=%t", mk), func(t *testing.T) {
			cli, srv := pair(t, &Config{Markers: mk}, &Config{Markers: mk})
			cr, sr := newRecorder(), newRecorder()
			cli.Start(cr)
			srv.Start(sr)
			m := cli.MULPDU()
			require.GreaterOrEqual(t, m, iwarpwire.MPAMinMULPDU)
			rng := rand.New(rand.NewPCG(3, 4))
			fill := rand.NewChaCha8([32]byte{7})
			const count = 300
			want := make([][]byte, count)
			for i := range want {
				n := rng.IntN(m + 1)
				if i%10 == 0 {
					n = m
				}
				b := make([]byte, n)
				_, _ = fill.Read(b)
				want[i] = b
			}
			errc := make(chan error, 1)
			go func() {
				for _, b := range want {
					h := min(len(b), 14)
					if err := cli.SendSegment(b[:h], b[h:]); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			for i, w := range want {
				got := sr.next(t)
				require.Equal(t, len(w), len(got), "segment %d", i)
				require.True(t, bytes.Equal(w, got), "segment %d", i)
			}
			require.NoError(t, <-errc)
			// and back, after the first FPDU the Responder may send.
			for i := range 50 {
				require.NoError(t, srv.SendSegment(nil, want[i]))
			}
			for i := range 50 {
				require.True(t, bytes.Equal(want[i], cr.next(t)))
			}
			info := cli.Info()
			assert.Equal(t, "mpa", info.Kind)
			assert.Equal(t, uint64(count), info.SegmentsSent)
			assert.Equal(t, uint64(50), info.SegmentsReceived)
			assert.Equal(t, uint64(count), srv.Info().SegmentsReceived)
		})
	}
}

// tapConn records every octet written.
type tapConn struct {
	net.Conn
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *tapConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// TestMarkersOnTheWire inspects the octet stream an Initiator sends when the
// Responder requires Markers: a Marker immediately precedes the first FPDU
// and one starts at every 512th octet after it, each pointing at the
// ULPDU_Length field of the FPDU containing it, or 0 between FPDUs
// (RFC 5044 §4.3, §7.1.2 rule 7).
func TestMarkersOnTheWire(t *testing.T) {
	ln, err := Listen("tcp", "127.0.0.1:0", &Config{Markers: true})
	require.NoError(t, err)
	defer ln.Close()
	ch := make(chan *Conn, 1)
	go func() {
		c, err := ln.Accept(testCtx(t))
		assert.NoError(t, err)
		ch <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	tap := &tapConn{Conn: nc}
	cli, err := Client(testCtx(t), tap, &Config{})
	require.NoError(t, err)
	srv := <-ch
	require.NotNil(t, srv)
	teardown(t, cli, srv)
	require.True(t, cli.Params().MarkersTx)
	sr := newRecorder()
	srv.Start(sr)
	cli.Start(newRecorder())

	rng := rand.New(rand.NewPCG(5, 6))
	var sizes []int
	for range 200 {
		n := rng.IntN(1400)
		sizes = append(sizes, n)
		require.NoError(t, cli.SendSegment(nil, make([]byte, n)))
	}
	for range sizes {
		sr.next(t)
	}
	tap.mu.Lock()
	stream := bytes.Clone(tap.out.Bytes())[24:] // after the 24-octet Request (enhanced: no, rev 1: 20 + 0)
	tap.mu.Unlock()
	_ = stream
	tap.mu.Lock()
	all := bytes.Clone(tap.out.Bytes())
	tap.mu.Unlock()
	reqLen, err := FrameLen(all)
	require.NoError(t, err)
	stream = all[reqLen:]

	// FPDU starts (ULPDU_Length positions) derived independently: walk the
	// stream skipping every 4 octets at multiples of 512.
	starts := map[int]bool{}
	pos := 0
	skip := func() {
		for pos%iwarpwire.MPAMarkerInterval == 0 && pos < len(stream) {
			pos += iwarpwire.MPAMarkerLen
		}
	}
	for _, n := range sizes {
		skip()
		starts[pos] = true
		left := iwarpwire.MPAFPDUHeaderLen + n + padLen(n) + iwarpwire.MPACRCLen
		for left > 0 {
			if pos%iwarpwire.MPAMarkerInterval == 0 {
				pos += iwarpwire.MPAMarkerLen
				continue
			}
			pos++
			left--
		}
	}
	require.Equal(t, len(stream), pos, "stream length matches FPDUs plus Markers")
	markers := 0
	for off := 0; off < len(stream); off += iwarpwire.MPAMarkerInterval {
		m := stream[off : off+4]
		require.Equal(t, []byte{0, 0}, m[:2], "RESERVED at %d", off)
		ptr := int(m[2])<<8 | int(m[3])
		if ptr == 0 {
			require.True(t, starts[off+4], "FPDUPTR 0 at %d must precede an FPDU", off)
		} else {
			require.True(t, starts[off-ptr], "FPDUPTR %d at %d must point at an FPDU start", ptr, off)
			require.Less(t, off-ptr, off)
		}
		markers++
	}
	assert.Greater(t, markers, 100)
}

// TestBadCRC: an FPDU whose CRC does not match ends delivery with an
// *llp.Error code 2 (RFC 5044 §8), after the good FPDUs before it; the
// sending direction stays open for the Terminate.
func TestBadCRC(t *testing.T) {
	got := make(chan []byte, 1)
	addr, wait := rawPeer(t, func(nc net.Conn) {
		req, err := readFrameRaw(nc)
		if !assert.NoError(t, err) || !assert.True(t, req.CRC) {
			return
		}
		rep := Frame{Reply: true, CRC: true, Rev: 1}
		var b []byte
		b = rep.Append(b)
		b = (&FPDU{ULPDU: []byte("good one"), CRC: true}).append(b)
		bad := (&FPDU{ULPDU: []byte("bad one!"), Pos: 16, CRC: true}).append(nil)
		bad[len(bad)-1] ^= 1
		b = append(b, bad...)
		b = (&FPDU{ULPDU: []byte("after"), Pos: 32, CRC: true}).append(b)
		_, _ = nc.Write(b)
		// The Initiator can still send (its Terminate).
		buf := make([]byte, 64)
		n, _ := io.ReadAtLeast(nc, buf, 12)
		got <- buf[:n]
	})
	cli, err := Dial(testCtx(t), "tcp", addr, &Config{})
	require.NoError(t, err)
	teardown(t, cli)
	r := newRecorder()
	cli.Start(r)
	assert.Equal(t, []byte("good one"), r.next(t))
	err = r.end(t)
	require.ErrorIs(t, err, errCRC)
	assert.Equal(t, uint8(iwarp.Term.MPACRC.Code), llpCode(t, err))
	assert.Empty(t, r.segs, "nothing delivered after the error")
	require.NoError(t, cli.SendSegment([]byte("TERM"), []byte("inate")))
	assert.Equal(t, (&FPDU{ULPDU: []byte("TERMinate"), CRC: true}).append(nil), <-got)
	require.NoError(t, cli.Close())
	wait()
}

// TestCorruptMarker: with CRCs off, a Marker whose FPDUPTR disagrees with
// the ULPDU_Length framing is error code 3 (RFC 5044 §8).
func TestCorruptMarker(t *testing.T) {
	addr, wait := rawPeer(t, func(nc net.Conn) {
		req, err := readFrameRaw(nc)
		if !assert.NoError(t, err) || !assert.True(t, req.Markers) {
			return
		}
		b := (&Frame{Reply: true, Rev: 1}).Append(nil)
		var s []byte
		s = (&FPDU{ULPDU: make([]byte, 300), Markers: true}).append(s)
		f2 := len(s)
		s = (&FPDU{ULPDU: make([]byte, 900), Pos: uint64(len(s)), Markers: true}).append(s)
		require.Equal(t, []byte{0, 0, 0, byte(512 - f2)}, s[512:516])
		s[515] += 8 // point 8 octets too far back
		_, _ = nc.Write(append(b, s...))
		_, _ = io.Copy(io.Discard, nc)
	})
	cli, err := Dial(testCtx(t), "tcp", addr, &Config{Markers: true, NoCRC: true})
	require.NoError(t, err)
	teardown(t, cli)
	r := newRecorder()
	cli.Start(r)
	assert.Len(t, r.next(t), 300)
	err = r.end(t)
	require.ErrorIs(t, err, errMarker)
	assert.Equal(t, uint8(iwarp.Term.MPAMarker.Code), llpCode(t, err))
	require.NoError(t, cli.Close())
	wait()
}

// TestOversizedULPDU: a ULPDU_Length beyond the receive limit stops
// delivery with ErrULPDUTooLarge; a segment beyond MULPDU is refused on send.
func TestOversizedULPDU(t *testing.T) {
	addr, wait := rawPeer(t, func(nc net.Conn) {
		if _, err := readFrameRaw(nc); !assert.NoError(t, err) {
			return
		}
		b := (&Frame{Reply: true, CRC: true, Rev: 1}).Append(nil)
		b = (&FPDU{ULPDU: make([]byte, 1000), CRC: true}).append(b)
		b = (&FPDU{ULPDU: make([]byte, 1001), CRC: true}).append(b)
		_, _ = nc.Write(b)
		_, _ = io.Copy(io.Discard, nc)
	})
	cli, err := Dial(testCtx(t), "tcp", addr, &Config{MaxRecvULPDU: 1000, MaxMULPDU: 600})
	require.NoError(t, err)
	teardown(t, cli)
	assert.Equal(t, 600, cli.MULPDU())
	err = cli.SendSegment(make([]byte, 14), make([]byte, 587))
	require.ErrorIs(t, err, llp.ErrSegmentTooLarge)
	r := newRecorder()
	cli.Start(r)
	assert.Len(t, r.next(t), 1000)
	err = r.end(t)
	require.ErrorIs(t, err, ErrULPDUTooLarge)
	assert.Equal(t, uint8(iwarp.Term.MPAMarker.Code), llpCode(t, err))
	require.NoError(t, cli.Close())
	wait()
}

// TestReject: the Responder's ULP rejects; the Initiator gets a
// *RejectError with the Reply's private data (RFC 5044 §7.1.2 rules 2, 3).
func TestReject(t *testing.T) {
	for _, enh := range []bool{false, true} {
		t.Run(fmt.Sprintf("enhanced=%t", enh), func(t *testing.T) {
			ln, err := Listen("tcp", "127.0.0.1:0", &Config{
				IRD: 2, ORD: 2,
				Accept: func(req *Frame) (Decision, error) {
					assert.Equal(t, []byte("let me in"), req.PrivateData)
					return Decision{Reject: true, PrivateData: []byte("go away"), IRDORD: &iwarp.IRDORD{IRD: 2, ORD: 9}}, nil
				},
			})
			require.NoError(t, err)
			defer ln.Close()
			errc := make(chan error, 1)
			go func() {
				_, err := ln.Accept(testCtx(t))
				errc <- err
			}()
			c, err := Dial(testCtx(t), "tcp", ln.Addr().String(), &Config{Enhanced: enh, IRD: 3, ORD: 3, PrivateData: []byte("let me in")})
			assert.Nil(t, c)
			require.ErrorIs(t, err, errRejected)
			var re *RejectError
			require.ErrorAs(t, err, &re)
			assert.True(t, re.Reply.Reject)
			assert.Equal(t, []byte("go away"), re.Reply.PrivateData)
			if enh {
				// RFC 6581 §9.1: the Responder names the ORD it requires.
				assert.Equal(t, iwarp.IRDORD{IRD: 2, ORD: 9}, re.Reply.IRDORD)
			}
			require.ErrorIs(t, <-errc, errRejected)
		})
	}
}

// TestResponderWaitsForFirstFPDU: RFC 5044 §7.1.2 rule 4.
func TestResponderWaitsForFirstFPDU(t *testing.T) {
	cli, srv := pair(t, &Config{}, &Config{})
	cr, sr := newRecorder(), newRecorder()
	cli.Start(cr)
	srv.Start(sr)
	sent := make(chan error, 1)
	go func() { sent <- srv.SendSegment(nil, []byte("early")) }()
	select {
	case err := <-sent:
		t.Fatalf("Responder sent before receiving an FPDU: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, cli.SendSegment(nil, []byte("rtr")))
	require.NoError(t, <-sent)
	assert.Equal(t, []byte("rtr"), sr.next(t))
	assert.Equal(t, []byte("early"), cr.next(t))
}

// TestResponderSendAfterClose: a Responder blocked by rule 4 is released by
// Close with llp.ErrClosed.
func TestResponderSendAfterClose(t *testing.T) {
	_, srv := pair(t, &Config{}, &Config{})
	sent := make(chan error, 1)
	go func() { sent <- srv.SendSegment(nil, []byte("x")) }()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, srv.Close())
	require.ErrorIs(t, <-sent, llp.ErrClosed)
	require.ErrorIs(t, srv.SendSegment(nil, nil), llp.ErrClosed)
}

// TestEnhancedNegotiation covers RFC 6581 §9.1 and §9.2.
func TestEnhancedNegotiation(t *testing.T) {
	t.Run("IRD ORD", func(t *testing.T) {
		cli, srv := pair(t, &Config{Enhanced: true, IRD: 16, ORD: 32}, &Config{IRD: 8, ORD: 64})
		cp, sp := cli.Params(), srv.Params()
		// Responder: IRD 8 (its own), ORD min(64, initiator IRD 16) = 16.
		assert.Equal(t, uint16(8), sp.IRD)
		assert.Equal(t, uint16(16), sp.ORD)
		assert.Equal(t, [2]uint16{16, 32}, [2]uint16{sp.PeerIRD, sp.PeerORD})
		// Initiator: ORD at most responder IRD 8; IRD 16 >= responder ORD 16.
		assert.Equal(t, uint16(16), cp.IRD)
		assert.Equal(t, uint16(8), cp.ORD)
		assert.Equal(t, [2]uint16{8, 16}, [2]uint16{cp.PeerIRD, cp.PeerORD})
		assert.False(t, cp.PeerToPeer)
	})
	t.Run("no negotiation 0x3FFF", func(t *testing.T) {
		cli, srv := pair(t, &Config{Enhanced: true, IRD: iwarp.NoNegotiation, ORD: iwarp.NoNegotiation}, &Config{IRD: 8, ORD: 8})
		assert.Equal(t, [2]uint16{iwarp.NoNegotiation, iwarp.NoNegotiation}, [2]uint16{cli.Params().PeerIRD, cli.Params().PeerORD})
		assert.Equal(t, [2]uint16{8, 8}, [2]uint16{srv.Params().IRD, srv.Params().ORD})
	})
	t.Run("peer-to-peer RTR", func(t *testing.T) {
		cli, srv := pair(t, &Config{Enhanced: true, PeerToPeer: true, RTR: iwarp.RTRWrite | iwarp.RTRSend, IRD: 1, ORD: 1},
			&Config{RTR: iwarp.RTRWrite | iwarp.RTRRead, IRD: 1, ORD: 1})
		assert.True(t, cli.Params().PeerToPeer)
		assert.Equal(t, iwarp.RTRWrite, cli.Params().RTR)
		assert.Equal(t, iwarp.RTRWrite, iwarpwire.PickRTR(cli.Params().RTR))
		assert.True(t, srv.Params().PeerToPeer)
		assert.Equal(t, iwarp.RTRWrite, srv.Params().RTR)
	})
	t.Run("Read RTR raises IRD from 0", func(t *testing.T) {
		_, srv := pair(t, &Config{Enhanced: true, PeerToPeer: true, RTR: iwarp.RTRRead, IRD: 1, ORD: 0}, &Config{RTR: iwarp.RTRRead})
		assert.Equal(t, uint16(1), srv.Params().IRD)
		assert.Equal(t, iwarp.RTRRead, srv.Params().RTR)
	})
	t.Run("no matching RTR is code 7", func(t *testing.T) {
		ln, err := Listen("tcp", "127.0.0.1:0", &Config{RTR: iwarp.RTRRead})
		require.NoError(t, err)
		defer ln.Close()
		ch := make(chan *Conn, 1)
		go func() {
			c, _ := ln.Accept(testCtx(t))
			ch <- c
		}()
		c, err := Dial(testCtx(t), "tcp", ln.Addr().String(), &Config{Enhanced: true, PeerToPeer: true, RTR: iwarp.RTRSend})
		srv := <-ch
		require.NotNil(t, srv)
		teardown(t, srv)
		assert.Nil(t, c)
		var ne *NegotiationError
		require.ErrorAs(t, err, &ne)
		require.ErrorIs(t, err, iwarp.ErrNoMatchingRTR)
		assert.Equal(t, uint8(iwarp.Term.NoMatchingRTR.Code), llpCode(t, err))
		assert.Equal(t, iwarp.RTRRead, srv.Params().RTR, "the Responder offered what it supports")
		// The Responder receives the Initiator's Terminate as its first
		// FPDU (RFC 6581 §9.3), then the end of the connection.
		sr := newRecorder()
		srv.Start(sr)
		assert.Equal(t, iwarpwire.AppendEstablishmentTerminate(nil, iwarp.Term.NoMatchingRTR), sr.next(t))
		assert.NoError(t, sr.end(t))
	})
	t.Run("insufficient IRD is code 6", func(t *testing.T) {
		addr, wait := rawPeer(t, func(nc net.Conn) {
			if _, err := readFrameRaw(nc); !assert.NoError(t, err) {
				return
			}
			_, _ = nc.Write((&Frame{Reply: true, CRC: true, Rev: 2, Enhanced: true, IRDORD: iwarp.IRDORD{IRD: 4, ORD: 5}}).Append(nil))
			_, _ = io.Copy(io.Discard, nc)
		})
		_, err := Dial(testCtx(t), "tcp", addr, &Config{Enhanced: true, IRD: 4, ORD: 4})
		var ne *NegotiationError
		require.ErrorAs(t, err, &ne)
		require.ErrorIs(t, err, iwarp.ErrInsufficientIRD)
		assert.Equal(t, uint8(iwarp.Term.InsufficientIRD.Code), llpCode(t, err))
		wait()
	})
}

// TestStartupErrors covers improperly formatted or unexpected startup
// frames (RFC 5044 §7.1.2 rules 2, 3, 5, 8, 9; RFC 6581 §6, §10).
func TestStartupErrors(t *testing.T) {
	initiatorCase := func(t *testing.T, reply []byte, cfg *Config) error {
		addr, wait := rawPeer(t, func(nc net.Conn) {
			if _, err := readFrameRaw(nc); !assert.NoError(t, err) {
				return
			}
			_, _ = nc.Write(reply)
			_, _ = io.Copy(io.Discard, nc) // until the Initiator closes
		})
		defer wait()
		c, err := Dial(testCtx(t), "tcp", addr, cfg)
		assert.Nil(t, c)
		return err
	}
	t.Run("Initiator/Initiator", func(t *testing.T) {
		err := initiatorCase(t, (&Frame{Rev: 1}).Append(nil), &Config{})
		require.ErrorIs(t, err, errActiveActive)
		require.ErrorIs(t, err, errBadKey)
		assert.Equal(t, uint8(iwarp.Term.MPAInvalidFrame.Code), llpCode(t, err))
	})
	t.Run("bad key", func(t *testing.T) {
		err := initiatorCase(t, cat([]byte("HTTP/1.1 200 OK\r"), []byte{0, 1, 0, 0}), &Config{})
		require.ErrorIs(t, err, errBadKey)
	})
	t.Run("reply revision above request", func(t *testing.T) {
		err := initiatorCase(t, (&Frame{Reply: true, Rev: 2}).Append(nil), &Config{})
		require.ErrorIs(t, err, errRevision)
	})
	t.Run("reply revision 0", func(t *testing.T) {
		err := initiatorCase(t, (&Frame{Reply: true, Rev: 0}).Append(nil), &Config{})
		require.ErrorIs(t, err, errRevision)
	})
	t.Run("unenhanced reply to enhanced request", func(t *testing.T) {
		err := initiatorCase(t, (&Frame{Reply: true, Rev: 2}).Append(nil), &Config{Enhanced: true})
		require.ErrorIs(t, err, errEnhancedMismatch)
	})
	t.Run("A not echoed", func(t *testing.T) {
		err := initiatorCase(t, (&Frame{Reply: true, Rev: 2, Enhanced: true}).Append(nil), &Config{Enhanced: true, PeerToPeer: true})
		require.ErrorIs(t, err, errEnhancedMismatch)
	})
	t.Run("private data over acceptance limit", func(t *testing.T) {
		err := initiatorCase(t, (&Frame{Reply: true, Rev: 1, PrivateData: make([]byte, 257)}).Append(nil), &Config{MaxPrivateData: 256})
		require.ErrorIs(t, err, errPrivateDataLength)
		assert.Equal(t, uint8(iwarp.Term.MPAInvalidFrame.Code), llpCode(t, err))
	})
	t.Run("peer closes during startup", func(t *testing.T) {
		addr, wait := rawPeer(t, func(nc net.Conn) {
			if _, err := readFrameRaw(nc); assert.NoError(t, err) {
				_, _ = nc.Write([]byte("MPA ID")) // then close
			}
		})
		defer wait()
		_, err := Dial(testCtx(t), "tcp", addr, &Config{})
		require.ErrorIs(t, err, ErrConnectionLost)
		assert.Equal(t, uint8(iwarp.Term.MPAConnectionLost.Code), llpCode(t, err))
	})

	responderCase := func(t *testing.T, request []byte, cfg *Config) error {
		ln, err := Listen("tcp", "127.0.0.1:0", cfg)
		require.NoError(t, err)
		defer ln.Close()
		errc := make(chan error, 1)
		go func() {
			c, err := ln.Accept(testCtx(t))
			if c != nil {
				_ = c.Abort()
			}
			errc <- err
		}()
		nc, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer nc.Close()
		_, err = nc.Write(request)
		require.NoError(t, err)
		err = <-errc
		// RFC 5044 §7.1.2 rule 2: the Responder closed the connection.
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, rerr := io.Copy(io.Discard, nc)
		assert.True(t, rerr == nil || errors.Is(rerr, net.ErrClosed) || errors.Is(rerr, io.EOF) || isReset(rerr), "read: %v", rerr)
		return err
	}
	t.Run("Reply key to a Responder", func(t *testing.T) {
		err := responderCase(t, (&Frame{Reply: true, Rev: 1}).Append(nil), &Config{})
		require.ErrorIs(t, err, errBadKey)
	})
	t.Run("revision 0 request (RDMAC)", func(t *testing.T) {
		err := responderCase(t, (&Frame{Markers: true, CRC: true, Rev: 0}).Append(nil), &Config{})
		require.ErrorIs(t, err, errRevision)
	})
	t.Run("revision 2 request to a revision 1 Responder", func(t *testing.T) {
		err := responderCase(t, (&Frame{Rev: 2, Enhanced: true}).Append(nil), &Config{Revision: 1})
		require.ErrorIs(t, err, errRevision)
	})
	t.Run("PD_Length over 512", func(t *testing.T) {
		err := responderCase(t, cat(keyReq(), []byte{0, 1, 0x02, 0x01}), &Config{})
		require.ErrorIs(t, err, errPrivateDataLength)
	})
	t.Run("Accept error", func(t *testing.T) {
		boom := errors.New("boom")
		err := responderCase(t, (&Frame{Rev: 1}).Append(nil), &Config{Accept: func(*Frame) (Decision, error) { return Decision{}, boom }})
		require.ErrorIs(t, err, boom)
	})
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

// TestHandshakeTimeout: a Responder that never answers (RFC 5044 §7.1.2
// rules 8 and 10) is bounded by the context and by HandshakeTimeout.
func TestHandshakeTimeout(t *testing.T) {
	release := make(chan struct{})
	var waits []func()
	defer func() {
		close(release)
		for _, w := range waits {
			w()
		}
	}()
	silent := func() string {
		addr, wait := rawPeer(t, func(nc net.Conn) { <-release })
		waits = append(waits, wait)
		return addr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Dial(ctx, "tcp", silent(), &Config{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 3*time.Second)

	_, err = Dial(context.Background(), "tcp", silent(), &Config{HandshakeTimeout: 50 * time.Millisecond})
	require.Error(t, err)
	assert.Equal(t, uint8(iwarp.Term.MPAConnectionLost.Code), llpCode(t, err))

	// Cancellation without a deadline.
	ctx3, cancel3 := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel3)
	_, err = Dial(ctx3, "tcp", silent(), &Config{HandshakeTimeout: -1})
	require.ErrorIs(t, err, context.Canceled)
}

// TestAbort: Abort resets the connection; the peer sees llp.ErrAborted.
func TestAbort(t *testing.T) {
	cli, srv := pair(t, &Config{}, &Config{})
	cr, sr := newRecorder(), newRecorder()
	cli.Start(cr)
	srv.Start(sr)
	require.NoError(t, cli.SendSegment(nil, []byte("hi")))
	sr.next(t)
	require.NoError(t, cli.Abort())
	err := sr.end(t)
	require.ErrorIs(t, err, llp.ErrAborted)
	assert.Equal(t, uint8(iwarp.Term.MPAConnectionLost.Code), llpCode(t, err))
	require.ErrorIs(t, cr.end(t), llp.ErrAborted)
	require.ErrorIs(t, cli.SendSegment(nil, []byte("x")), llp.ErrAborted)
	<-cli.Done()
}

// TestCloseFlushes: segments passed to SendSegment before Close all arrive,
// then the peer sees a graceful end (RFC 5041 §6.2.1, RFC 5044 §7.2).
func TestCloseFlushes(t *testing.T) {
	cli, srv := pair(t, &Config{}, &Config{})
	sr := newRecorder()
	srv.Start(sr)
	cr := newRecorder()
	cli.Start(cr)
	for i := range 100 {
		require.NoError(t, cli.SendSegment([]byte{byte(i)}, make([]byte, 1000)))
	}
	require.NoError(t, cli.Close())
	require.ErrorIs(t, cli.SendSegment(nil, nil), llp.ErrClosed)
	for i := range 100 {
		assert.Equal(t, byte(i), sr.next(t)[0])
	}
	require.NoError(t, sr.end(t))
	// The Responder can still answer on its half connection.
	require.NoError(t, srv.SendSegment(nil, []byte("bye")))
	assert.Equal(t, []byte("bye"), cr.next(t))
	require.NoError(t, srv.Close())
	require.NoError(t, cr.end(t))
}

// TestCloseTimeout: a peer that never sends its FIN does not hold the
// receive goroutine past CloseTimeout.
func TestCloseTimeout(t *testing.T) {
	cli, _ := pair(t, &Config{CloseTimeout: 50 * time.Millisecond}, &Config{})
	cr := newRecorder()
	cli.Start(cr)
	require.NoError(t, cli.Close())
	err := cr.end(t)
	require.ErrorIs(t, err, ErrConnectionLost)
	<-cli.Done()
}

// TestHandlerRefusal: after HandleSegment returns an error nothing more is
// delivered (RFC 5041 §7.1), and HandleClosed still comes once.
func TestHandlerRefusal(t *testing.T) {
	cli, srv := pair(t, &Config{}, &Config{})
	sr := newRecorder()
	sr.refuse = 2
	srv.Start(sr)
	cli.Start(newRecorder())
	for i := range 5 {
		require.NoError(t, cli.SendSegment(nil, []byte{byte(i)}))
	}
	require.NoError(t, cli.Close())
	require.NoError(t, sr.end(t))
	assert.Len(t, sr.segs, 2)
}

// TestSiwInterop replays the Linux siw client of rping-siw.pcap against this
// Responder: it answers with the Reply siw's own Responder sent, octet for
// octet, then accepts siw's FPDU stream.
func TestSiwInterop(t *testing.T) {
	streams := tcpStreams(t, siwPcap)
	client, server := streams[0xd5f7], streams[7174]
	ln, err := Listen("tcp", "127.0.0.1:0", &Config{NoCRC: true, IRD: 1, ORD: 1})
	require.NoError(t, err)
	defer ln.Close()
	ch := make(chan *Conn, 1)
	go func() {
		c, err := ln.Accept(testCtx(t))
		assert.NoError(t, err)
		ch <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	_, err = nc.Write(client[:24])
	require.NoError(t, err)
	rep := make([]byte, 24)
	_, err = io.ReadFull(nc, rep)
	require.NoError(t, err)
	assert.Equal(t, server[:24], rep, "Reply identical to siw's")
	srv := <-ch
	require.NotNil(t, srv)
	teardown(t, srv)
	assert.Equal(t, Params{Revision: 2, Enhanced: true, IRD: 1, ORD: 1, PeerIRD: 1, PeerORD: 1}, srv.Params())
	r := newRecorder()
	srv.Start(r)
	_, err = nc.Write(client[24:])
	require.NoError(t, err)
	require.NoError(t, nc.(*net.TCPConn).CloseWrite())
	require.NoError(t, r.end(t))
	fpdus := 0
	for b := client[24:]; len(b) > 0; fpdus++ {
		_, n, err := ParseFPDU(b, 0, false, false, nil)
		require.NoError(t, err)
		b = b[n:]
	}
	require.Len(t, r.segs, fpdus, "every FPDU rping's client sent")
	assert.Equal(t, []byte{0x41, 0x43}, (<-r.segs)[:2], "rping's first Send")
}

// FuzzReceive feeds an arbitrary octet stream into the receive path of an
// Initiator after a valid negotiation (Markers and CRC chosen by the
// input): no panic, HandleClosed exactly once, and the cause is nil or
// typed.
func FuzzReceive(f *testing.F) {
	good := (&FPDU{ULPDU: []byte("hello"), CRC: true}).append(nil)
	f.Add(uint8(0), good)
	f.Add(uint8(1), good)
	f.Add(uint8(2), (&FPDU{ULPDU: make([]byte, 700), Markers: true}).append(nil))
	f.Add(uint8(3), append((&FPDU{ULPDU: make([]byte, 700), Markers: true, CRC: true}).append(nil), 0, 0))
	f.Add(uint8(0), []byte{0xff, 0xff, 1, 2, 3})
	f.Fuzz(func(t *testing.T, mode uint8, stream []byte) {
		markers, crc := mode&2 != 0, mode&1 != 0
		a, b := net.Pipe()
		peerDone := make(chan struct{})
		go func() {
			defer close(peerDone)
			defer b.Close()
			if _, err := readFrameRaw(b); err != nil {
				return
			}
			rep := Frame{Reply: true, Rev: 1, CRC: crc}
			if _, err := b.Write(rep.Append(nil)); err != nil {
				return
			}
			_, _ = b.Write(stream)
		}()
		c, err := Client(context.Background(), a, &Config{Markers: markers, NoCRC: true, MaxRecvULPDU: 4096})
		require.NoError(t, err)
		r := &countingHandler{closed: make(chan error, 2)}
		c.Start(r)
		var cause error
		select {
		case cause = <-r.closed:
		case <-time.After(5 * time.Second):
			t.Fatal("no HandleClosed")
		}
		_ = c.Abort()
		<-c.Done()
		<-peerDone
		require.Empty(t, r.closed, "HandleClosed called once")
		if cause != nil {
			var le *llp.Error
			require.ErrorAs(t, cause, &le)
			require.Contains(t, []uint8{iwarp.Term.MPAConnectionLost.Code, iwarp.Term.MPACRC.Code, iwarp.Term.MPAMarker.Code}, le.Code)
		}
	})
}

type countingHandler struct {
	closed chan error
}

func (h *countingHandler) HandleSegment(seg []byte) error {
	if len(seg) > 4096 {
		panic("segment over the receive limit")
	}
	return nil
}

func (h *countingHandler) HandleClosed(err error) { h.closed <- err }

// TestRejectLeavesTCPOpen: after a rejection both ends exit MPA but the TCP
// connection stays open for the ULP (RFC 5044 §7.1.2 rules 2 and 3) when
// the caller owns it (Client, Server).
func TestRejectLeavesTCPOpen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	type res struct {
		nc  net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			ch <- res{nil, err}
			return
		}
		_, err = Server(testCtx(t), nc, &Config{Accept: func(*Frame) (Decision, error) {
			return Decision{Reject: true, PrivateData: []byte("use TCP")}, nil
		}})
		ch <- res{nc, err}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	_, err = Client(testCtx(t), nc, &Config{})
	var re *RejectError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, []byte("use TCP"), re.Reply.PrivateData)
	r := <-ch
	require.ErrorIs(t, r.err, errRejected)
	defer r.nc.Close()
	// Streaming mode continues on the same connection.
	_, err = nc.Write([]byte("plain"))
	require.NoError(t, err)
	buf := make([]byte, 5)
	_, err = io.ReadFull(r.nc, buf)
	require.NoError(t, err)
	assert.Equal(t, []byte("plain"), buf)
}

// TestConfigValidation rejects configurations the RFCs forbid a sender.
func TestConfigValidation(t *testing.T) {
	for name, cfg := range map[string]*Config{
		"revision 3":             {Revision: 3},
		"enhanced on revision 1": {Revision: 1, Enhanced: true},
		"p2p without enhanced":   {PeerToPeer: true},
		"IRD over 14 bits":       {Enhanced: true, IRD: 0x4000},
		"private data 513":       {PrivateData: make([]byte, 513)},
		"enhanced with 509":      {Enhanced: true, PrivateData: make([]byte, 509)},
	} {
		t.Run(name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			_, err := Client(context.Background(), a, cfg)
			require.Error(t, err)
			assert.True(t, errors.Is(err, errInvalidConfig) || errors.Is(err, errPrivateDataLength), "%v", err)
		})
	}
	_, err := Listen("tcp", "127.0.0.1:0", &Config{Revision: 9})
	require.ErrorIs(t, err, errInvalidConfig)
}

// failOnWrite is a client TCP conn whose writes fail with errno once
// armed: the kernel hands a socket error (a peer's RST, TCP_USER_TIMEOUT's
// ETIMEDOUT) to the first call that comes.
type failOnWrite struct {
	net.Conn
	errno syscall.Errno
	armed atomic.Bool
}

func (r *failOnWrite) Write(b []byte) (int, error) {
	if r.armed.Load() {
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", r.errno)}
	}
	return r.Conn.Write(b)
}

// TestRFC5044_8_SocketErrorSeenBySendFirst: the socket error reaches a
// send first and the receive side then reads only end of file; the stream
// still ends with "TCP connection lost" (RFC 5044 §8 code 1) naming that
// error, not with a graceful close.
func TestRFC5044_8_SocketErrorSeenBySendFirst(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ECONNRESET, syscall.ETIMEDOUT, syscall.EHOSTUNREACH} {
		t.Run(errno.Error(), func(t *testing.T) {
			var rc *failOnWrite
			cli, srv := pairWrapped(t, &Config{}, &Config{}, func(nc net.Conn) net.Conn {
				rc = &failOnWrite{Conn: nc, errno: errno}
				return rc
			})
			cr := newRecorder()
			cli.Start(cr)

			rc.armed.Store(true)
			serr := cli.SendSegment(nil, []byte("x"))
			require.ErrorIs(t, serr, errno)
			require.NoError(t, srv.NetConn().Close()) // FIN: what the reader sees after the error
			err := cr.end(t)
			require.ErrorIs(t, err, ErrConnectionLost)
			assert.ErrorIs(t, err, errno)
			assert.Equal(t, uint8(iwarp.Term.MPAConnectionLost.Code), llpCode(t, err))
		})
	}
}
