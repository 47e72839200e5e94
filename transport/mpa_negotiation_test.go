package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// termFPDU is the FPDU carrying the Terminate an MPA Initiator sends after
// a failed RFC 6581 negotiation (CRCs on, no Markers), octet by octet: an
// untagged DDP segment on QN 2, MSN 1 (RFC 5041 §4.3), RDMAP opcode 0x7
// (RFC 5040 §4.1), Terminate Control layer 2, error type 0, code (RFC
// 6581 §8), no terminated headers (RFC 5040 §4.8).
func termFPDU(code byte) []byte {
	b := []byte{
		0x00, 0x16, // ULPDU_Length 22
		0x41, 0x47, 0, 0, 0, 0, // DDP control T=0 L=1 DV=1; RDMAP RV=1 Terminate
		0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, // QN 2, MSN 1, MO 0
		0x20, code, 0, 0, // layer 2 | type 0, code, HdrCt 0
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// mpaResponder is a scripted raw-TCP MPA Responder: it answers the first
// Request with reply and records what the Initiator sends afterwards.
type mpaResponder struct {
	addr   string
	dialed chan struct{} // closed by the test once Dial returned
	seen   chan responderSaw
}

type responderSaw struct {
	req mpa.Frame
	// rest holds the octets after the Request up to the Initiator's FIN
	// (err nil) or until the read failed (err).
	rest []byte
	err  error
	// closed: once Dial returned, a write from here drew a reset, so the
	// Initiator's socket is closed rather than left open or half-closed.
	closed bool
}

// startMPAResponder runs the script: after the Reply it reads until the
// Initiator's FIN, shuts its own sending side and, once dialed is closed,
// probes whether the Initiator's socket is closed.
func startMPAResponder(t *testing.T, reply mpa.Frame) *mpaResponder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &mpaResponder{addr: ln.Addr().String(), dialed: make(chan struct{}), seen: make(chan responderSaw, 1)}
	go func() {
		var s responderSaw
		defer func() { r.seen <- s }()
		defer ln.Close()
		nc, err := ln.Accept()
		if err != nil {
			s.err = err
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		hdr := make([]byte, iwarpwire.MPAFrameHeaderLen)
		if _, s.err = io.ReadFull(nc, hdr); s.err != nil {
			return
		}
		n, err := mpa.FrameLen(hdr)
		if s.err = err; err != nil {
			return
		}
		b := append(hdr, make([]byte, n-len(hdr))...)
		if _, s.err = io.ReadFull(nc, b[len(hdr):]); s.err != nil {
			return
		}
		if s.req, _, s.err = mpa.ParseFrame(b); s.err != nil {
			return
		}
		if _, s.err = nc.Write(reply.Append(nil)); s.err != nil {
			return
		}
		if s.rest, s.err = io.ReadAll(nc); s.err != nil {
			return
		}
		_ = nc.(*net.TCPConn).CloseWrite()
		select {
		case <-r.dialed:
		case <-time.After(5 * time.Second):
			return
		}
		for range 50 {
			_, err := nc.Write([]byte{0})
			if err == nil {
				_ = nc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
				_, err = nc.Read(make([]byte, 1))
			}
			if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
				s.closed = true
				return
			}
		}
	}()
	return r
}

func (r *mpaResponder) wait(t *testing.T) responderSaw {
	t.Helper()
	select {
	case s := <-r.seen:
		return s
	case <-time.After(15 * time.Second):
		t.Fatal("scripted MPA responder did not finish")
	}
	return responderSaw{}
}

// assertTerm checks that rest is exactly one Terminate FPDU with layer 2
// (LLP), error type 0 (MPA) and code, decoding it with this module's DDP
// and RDMAP parsers as well.
func assertTerm(t *testing.T, rest []byte, code uint8) {
	t.Helper()
	assert.Equal(t, termFPDU(code), rest, "exactly one Terminate FPDU")
	f, n, err := mpa.ParseFPDU(rest, 0, false, true, nil)
	if !assert.NoError(t, err) || !assert.Equal(t, len(rest), n) {
		return
	}
	h, hl, err := iwarpwire.ParseDDPUntaggedHeader(f.ULPDU)
	require.NoError(t, err)
	assert.Equal(t, iwarpwire.RDMAPQNTerminate, h.QN)
	assert.Equal(t, uint32(1), h.MSN)
	assert.Equal(t, iwarpwire.RDMAPControlByte(iwarp.RDMAPOpTerminate), h.RsvdULP[0])
	require.GreaterOrEqual(t, len(f.ULPDU[hl:]), iwarpwire.TerminateControlLen)
	got, _, _, _ := iwarpwire.DecodeTerminateControl(f.ULPDU[hl:])
	assert.Equal(t, iwarp.TermCode{Layer: iwarp.LayerLLP, EType: iwarp.LLPETypeMPA, Code: code}, got)
}

// TestDial_TermOnORDAboveIRD_RFC6581_9_1: the Responder answers with an
// ORD above this end's IRD. RFC 6581 §9.1: the Initiator "MUST send a TERM
// message to the responder indicating insufficient resources and terminate
// the connection ... Layer 2, Error Type 0, Error Code 6". Dial sends it,
// closes the TCP connection (no leaked socket) and fails with an error
// naming the cause.
func TestDial_TermOnORDAboveIRD_RFC6581_9_1(t *testing.T) {
	r := startMPAResponder(t, mpa.Frame{Reply: true, CRC: true, Rev: iwarpwire.MPARev2, Enhanced: true, IRDORD: iwarp.IRDORD{IRD: 4, ORD: 5}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pd := new(rdmap.Device).AllocPD()
	c, err := Dial(ctx, Options{LLP: MPA, IRD: 4, ORD: 4}, r.addr, 1, pd, nil)
	close(r.dialed)
	s := r.wait(t)
	assert.NoError(t, s.err, "the Initiator's FIN")
	assertTerm(t, s.rest, iwarp.Term.InsufficientIRD.Code)
	assert.True(t, s.closed, "the Initiator's socket is closed")

	assert.Nil(t, c)
	require.ErrorIs(t, err, iwarp.ErrInsufficientIRD)
	assert.NotErrorIs(t, err, ErrRejected)
	var ne *mpa.NegotiationError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, uint8(iwarp.Term.InsufficientIRD.Code), ne.Err.Code)
}

// TestDial_TermOnNoMatchingRTR_RFC6581_9_2: this end requests the
// client-server model (Control Flag A = 0, no RTR option); a Responder
// that answers with A = 1 and an RTR option leaves no RTR indication this
// end can generate. RFC 6581 §9.2: the Initiator "MUST send a TERM message
// ... indicating failure to negotiate a mutually compatible connection
// model or RTR option, and terminate the connection ... Layer 2, Error
// Type 0, Error Code 7".
func TestDial_TermOnNoMatchingRTR_RFC6581_9_2(t *testing.T) {
	r := startMPAResponder(t, mpa.Frame{Reply: true, CRC: true, Rev: iwarpwire.MPARev2, Enhanced: true,
		IRDORD: iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRWrite, IRD: 4, ORD: 4}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pd := new(rdmap.Device).AllocPD()
	c, err := Dial(ctx, Options{LLP: MPA, IRD: 4, ORD: 4}, r.addr, 1, pd, nil)
	close(r.dialed)
	s := r.wait(t)
	assert.NoError(t, s.err, "the Initiator's FIN")
	assert.False(t, s.req.IRDORD.PeerToPeer, "this end asked for the client-server model")
	assertTerm(t, s.rest, iwarp.Term.NoMatchingRTR.Code)
	assert.True(t, s.closed, "the Initiator's socket is closed")

	assert.Nil(t, c)
	require.ErrorIs(t, err, iwarp.ErrNoMatchingRTR)
	assert.NotErrorIs(t, err, ErrRejected)
	var ne *mpa.NegotiationError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, uint8(iwarp.Term.NoMatchingRTR.Code), ne.Err.Code)
}

// TestDial_ORDZeroWhenResponderIRDZero_RFC6581_9_1: "the initiator MUST
// set ... its ORD at most to the responder IRD". A Responder IRD of 0
// gives the endpoint ORD 0: an RDMA Read fails locally and nothing is sent.
func TestDial_ORDZeroWhenResponderIRDZero_RFC6581_9_1(t *testing.T) {
	r := startMPAResponder(t, mpa.Frame{Reply: true, CRC: true, Rev: iwarpwire.MPARev2, Enhanced: true, IRDORD: iwarp.IRDORD{IRD: 0, ORD: 0}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pd := new(rdmap.Device).AllocPD()
	c, err := Dial(ctx, Options{LLP: MPA, IRD: 4, ORD: 4}, r.addr, 1, pd, nil)
	require.NoError(t, err)
	ep := c.Endpoints[0]
	assert.Equal(t, -1, ep.Config().ORD, "ORD at most the responder IRD 0: none")
	sink, err := pd.Register(make([]byte, 8), rdmap.LocalWrite)
	require.NoError(t, err)
	_, err = ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: sink, Length: 8, RemoteSTag: 0x100})
	require.ErrorIs(t, err, rdmap.ErrInvalidWR, "a Read with ORD 0 fails locally")
	require.NoError(t, c.Close(ctx))
	close(r.dialed)
	s := r.wait(t)
	assert.NoError(t, s.err, "the Initiator's FIN")
	assert.Empty(t, s.rest, "no RDMA Read Request reached the responder")
}
