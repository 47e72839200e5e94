package mpa

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wantTermFPDU is the FPDU an Initiator sends after a failed RFC 6581
// negotiation, written out octet by octet (CRCs on, no Markers): an RDMAP
// Terminate (RFC 5040 §4.8) in an untagged DDP segment on QN 2, MSN 1
// (RFC 5041 §4.3, §5.3), carrying layer 2 (LLP), error type 0 (MPA) and
// code (RFC 6581 §8), with no terminated header (HdrCt M = D = R = 0).
func wantTermFPDU(code byte) []byte {
	b := []byte{
		0x00, 0x16, // ULPDU_Length 22
		0x41,       // DDP control: T=0, L=1, DV=1
		0x47,       // RDMAP control: RV=1, opcode 0x7 Terminate
		0, 0, 0, 0, // rest of RsvdULP
		0, 0, 0, 2, // QN 2
		0, 0, 0, 1, // MSN 1
		0, 0, 0, 0, // MO 0
		0x20, code, // layer 2 | error type 0, error code
		0x00, 0x00, // HdrCt M=D=R=0, reserved
	} // 24 octets: no pad
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// scripted is what a scripted raw-TCP Responder saw.
type scripted struct {
	req  Frame
	rest []byte // octets after the Request, up to EOF or the deadline
	err  error  // how reading rest ended: nil for EOF
	// closed: after the dialer returned, a probe from here met a reset,
	// so the dialer's socket is closed, not merely shut down for writing.
	closed bool
}

// scriptedResponder accepts one TCP connection, reads the MPA Request,
// answers with reply, collects everything the Initiator sends until its
// FIN, shuts its own sending side, and once dialed is closed checks that
// the Initiator's socket is gone (a write draws a reset).
func scriptedResponder(t *testing.T, reply *Frame) (addr string, dialed chan struct{}, seen <-chan scripted) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dialed = make(chan struct{})
	ch := make(chan scripted, 1)
	go func() {
		var s scripted
		defer func() { ch <- s }()
		defer ln.Close()
		nc, err := ln.Accept()
		if err != nil {
			s.err = err
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		if s.req, s.err = readFrameRaw(nc); s.err != nil {
			return
		}
		if _, s.err = nc.Write(reply.Append(nil)); s.err != nil {
			return
		}
		s.rest, s.err = io.ReadAll(nc)
		if s.err != nil {
			return
		}
		_ = nc.(*net.TCPConn).CloseWrite()
		select {
		case <-dialed:
		case <-time.After(5 * time.Second):
			return
		}
		s.closed = probeClosed(nc)
	}()
	return ln.Addr().String(), dialed, ch
}

// probeClosed writes to nc until the peer's reset comes back.
func probeClosed(nc net.Conn) bool {
	for range 50 {
		_, err := nc.Write([]byte{0})
		if err == nil {
			_ = nc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			_, err = nc.Read(make([]byte, 1))
		}
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			return true
		}
	}
	return false
}

func awaitScripted(t *testing.T, seen <-chan scripted) scripted {
	t.Helper()
	select {
	case s := <-seen:
		return s
	case <-time.After(15 * time.Second):
		t.Fatal("scripted responder did not finish")
	}
	return scripted{}
}

// TestDial_TermOnORDAboveIRD_RFC6581_9_1: a Responder ORD above the
// Initiator's IRD leaves the Initiator without the IRD resources it must
// set (RFC 6581 §9.1: "it MUST send a TERM message to the responder
// indicating insufficient resources and terminate the connection ... Layer
// 2, Error Type 0, Error Code 6"). Dial sends that Terminate as its first
// FPDU, closes the TCP connection and returns one error naming the cause.
func TestDial_TermOnORDAboveIRD_RFC6581_9_1(t *testing.T) {
	addr, dialed, seen := scriptedResponder(t, &Frame{Reply: true, CRC: true, Rev: iwarpwire.MPARev2, Enhanced: true, IRDORD: iwarp.IRDORD{IRD: 4, ORD: 5}})
	c, err := Dial(testCtx(t), "tcp", addr, &Config{Enhanced: true, IRD: 4, ORD: 4})
	close(dialed)
	s := awaitScripted(t, seen)
	assert.NoError(t, s.err, "the Initiator's FIN")
	assert.Equal(t, wantTermFPDU(iwarp.Term.InsufficientIRD.Code), s.rest, "exactly one Terminate FPDU, layer 2 type 0 code 6")
	assert.True(t, s.closed, "the Initiator's socket is closed")

	assert.Nil(t, c)
	require.ErrorIs(t, err, iwarp.ErrInsufficientIRD)
	assert.NotErrorIs(t, err, iwarp.ErrNoMatchingRTR)
	assert.Equal(t, uint8(iwarp.Term.InsufficientIRD.Code), llpCode(t, err))
	var ne *NegotiationError
	require.ErrorAs(t, err, &ne)
	// RFC 6581 §9.1: the Responder's values reach the ULP.
	assert.Equal(t, [2]uint16{4, 5}, [2]uint16{ne.Params.PeerIRD, ne.Params.PeerORD})
	assert.NoError(t, ne.TermErr)
}

// TestDial_TermOnNoMatchingRTR_RFC6581_9_2: a peer-to-peer Initiator that
// can generate none of the Responder's RTR indications "MUST send a TERM
// message ... Layer 2, Error Type 0, Error Code 7" and terminate the
// connection (RFC 6581 §9.2; §9.3: it sends the TERM instead of the RTR).
func TestDial_TermOnNoMatchingRTR_RFC6581_9_2(t *testing.T) {
	addr, dialed, seen := scriptedResponder(t, &Frame{Reply: true, CRC: true, Rev: iwarpwire.MPARev2, Enhanced: true,
		IRDORD: iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRRead, IRD: 1, ORD: 1}})
	c, err := Dial(testCtx(t), "tcp", addr, &Config{Enhanced: true, PeerToPeer: true, RTR: iwarp.RTRSend | iwarp.RTRWrite, IRD: 1, ORD: 1})
	close(dialed)
	s := awaitScripted(t, seen)
	assert.NoError(t, s.err, "the Initiator's FIN")
	assert.Equal(t, iwarp.RTRSend|iwarp.RTRWrite, s.req.IRDORD.RTR, "B and C set for the options the Initiator supports")
	assert.Equal(t, wantTermFPDU(iwarp.Term.NoMatchingRTR.Code), s.rest, "exactly one Terminate FPDU, layer 2 type 0 code 7")
	assert.True(t, s.closed, "the Initiator's socket is closed")

	assert.Nil(t, c)
	require.ErrorIs(t, err, iwarp.ErrNoMatchingRTR)
	assert.NotErrorIs(t, err, iwarp.ErrInsufficientIRD)
	assert.Equal(t, uint8(iwarp.Term.NoMatchingRTR.Code), llpCode(t, err))
}

// TestDial_TermOnConnectionModelMismatch_RFC6581_9_2: the Responder MUST
// echo Control Flag A; a Reply that does not leaves no mutually compatible
// connection model, which the Initiator reports with the same Terminate
// as a missing RTR option (RFC 6581 §9.2, code 7), then closes.
func TestDial_TermOnConnectionModelMismatch_RFC6581_9_2(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p2p   bool
		reply iwarp.IRDORD
	}{
		{"A=1 answered A=0", true, iwarp.IRDORD{IRD: 1, ORD: 1}},
		{"A=0 answered A=1", false, iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRWrite, IRD: 1, ORD: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, dialed, seen := scriptedResponder(t, &Frame{Reply: true, CRC: true, Rev: iwarpwire.MPARev2, Enhanced: true, IRDORD: tc.reply})
			c, err := Dial(testCtx(t), "tcp", addr, &Config{Enhanced: true, PeerToPeer: tc.p2p, IRD: 1, ORD: 1})
			close(dialed)
			s := awaitScripted(t, seen)
			assert.NoError(t, s.err, "the Initiator's FIN")
			assert.Equal(t, wantTermFPDU(iwarp.Term.NoMatchingRTR.Code), s.rest, "exactly one Terminate FPDU, layer 2 type 0 code 7")
			assert.True(t, s.closed, "the Initiator's socket is closed")
			assert.Nil(t, c)
			require.ErrorIs(t, err, iwarp.ErrNoMatchingRTR)
			require.ErrorIs(t, err, errEnhancedMismatch)
			assert.Equal(t, uint8(iwarp.Term.NoMatchingRTR.Code), llpCode(t, err))
		})
	}
}

// TestClient_TermWithMarkers_RFC6581_9_1: the Terminate is an FPDU like
// any other (RFC 5044 §4.3): a Responder that asked for Markers gets the
// FPDUPTR-0 Marker before it, and with C = 0 in both frames the CRC field
// is zero.
func TestClient_TermWithMarkers_RFC6581_9_1(t *testing.T) {
	addr, dialed, seen := scriptedResponder(t, &Frame{Reply: true, Markers: true, Rev: iwarpwire.MPARev2, Enhanced: true, IRDORD: iwarp.IRDORD{IRD: 4, ORD: 9}})
	_, err := Dial(testCtx(t), "tcp", addr, &Config{Enhanced: true, NoCRC: true, IRD: 4, ORD: 4})
	close(dialed)
	s := awaitScripted(t, seen)
	assert.NoError(t, s.err, "the Initiator's FIN")
	want := wantTermFPDU(iwarp.Term.InsufficientIRD.Code)
	want = append([]byte{0, 0, 0, 0}, want[:len(want)-iwarpwire.MPACRCLen]...) // Marker, then no CRC
	want = append(want, 0, 0, 0, 0)
	assert.Equal(t, want, s.rest)
	assert.True(t, s.closed, "the Initiator's socket is closed")
	require.ErrorIs(t, err, iwarp.ErrInsufficientIRD)
}

// TestServer_RejectsORDAboveInitiatorIRD_RFC6581_9_1: "The responder MUST
// set its ORD at most to the initiator IRD. The responder MAY reject the
// connection request if the initiator IRD is not sufficient for the
// ULP-required ORD and specify the required ORD in the MPA Reject Frame
// responder ORD." An accepting Decision that requires more ORD than the
// Initiator's IRD becomes such a Reject; the Responder reports code 6.
func TestServer_RejectsORDAboveInitiatorIRD_RFC6581_9_1(t *testing.T) {
	ln, err := Listen("tcp", "127.0.0.1:0", &Config{IRD: 8, ORD: 8,
		Accept: func(*Frame) (Decision, error) {
			return Decision{PrivateData: []byte("need 6"), IRDORD: &iwarp.IRDORD{IRD: 8, ORD: 6}}, nil
		}})
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
	c, err := Dial(testCtx(t), "tcp", ln.Addr().String(), &Config{Enhanced: true, IRD: 4, ORD: 4})
	assert.Nil(t, c)
	var re *RejectError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, iwarp.IRDORD{IRD: 8, ORD: 6}, re.Reply.IRDORD, "the Reject names the required ORD")
	assert.Equal(t, []byte("need 6"), re.Reply.PrivateData)
	serr := <-errc
	require.ErrorIs(t, serr, errRejected)
	require.ErrorIs(t, serr, iwarp.ErrInsufficientIRD)
	assert.Equal(t, uint8(iwarp.Term.InsufficientIRD.Code), llpCode(t, serr))
}

// TestResponderReadRTRRaisesIRD_RFC6581_9_1: a Responder that offers only
// the zero-length RDMA Read RTR must accept at least that one inbound
// Read, whatever the Initiator ORD (RFC 6581 §9.1: the responder IRD MAY
// be increased to support the selected connection model).
func TestResponderReadRTRRaisesIRD_RFC6581_9_1(t *testing.T) {
	cli, srv := pair(t, &Config{Enhanced: true, PeerToPeer: true, RTR: iwarp.RTRRead, IRD: 2, ORD: 2}, &Config{RTR: iwarp.RTRRead, IRD: 0, ORD: 2})
	assert.Equal(t, uint16(1), srv.Params().IRD)
	assert.Equal(t, uint16(1), cli.Params().PeerIRD)
	assert.Equal(t, uint16(1), cli.Params().ORD)
	assert.Equal(t, iwarp.RTRRead, cli.Params().RTR)
}

// TestNegotiationErrorText_RFC6581_9_1: the error says what happened on the wire and
// why (RFC 6581 §9.1).
func TestNegotiationErrorText_RFC6581_9_1(t *testing.T) {
	e := &NegotiationError{Err: newError(iwarp.Term.InsufficientIRD, iwarp.ErrInsufficientIRD)}
	assert.Equal(t, "mpa: negotiation failed, Terminate sent, connection closed: llp error (type 0x0, code 0x06): iwarp: insufficient IRD resources", e.Error())
	e.TermErr = errors.New("broken pipe")
	assert.Contains(t, e.Error(), "sending the Terminate failed: broken pipe")
	require.ErrorIs(t, e, iwarp.ErrInsufficientIRD)
}
