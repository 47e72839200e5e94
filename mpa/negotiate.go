package mpa

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// NegotiationError reports that the Initiator received an accepting MPA
// Reply it cannot honour and, as RFC 6581 requires, sent the Responder a
// Terminate (layer 2, type 0, Err.Code) as its first FPDU and closed the
// TCP connection: insufficient IRD for the Responder ORD
// (iwarp.Term.InsufficientIRD.Code, ErrInsufficientIRD, §9.1), or no RTR indication or
// connection model both ends support (iwarp.Term.NoMatchingRTR.Code, ErrNoMatchingRTR,
// §9.2).
type NegotiationError struct {
	// Err carries the Terminate error type and code; its cause matches
	// ErrInsufficientIRD or ErrNoMatchingRTR.
	Err *llp.Error
	// Params are the values negotiated so far, with the Responder's IRD
	// and ORD (RFC 6581 §9.1: passed to the ULP).
	Params Params
	// TermErr is the error of sending the Terminate, nil when it was
	// written.
	TermErr error
}

// Error implements error.
func (e *NegotiationError) Error() string {
	if e.TermErr != nil {
		return fmt.Sprintf("mpa: negotiation failed (sending the Terminate failed: %v), connection closed: %v", e.TermErr, e.Err)
	}
	return "mpa: negotiation failed, Terminate sent, connection closed: " + e.Err.Error()
}

// Unwrap returns the *llp.Error.
func (e *NegotiationError) Unwrap() error { return e.Err }

// Dial opens a TCP connection to addr and starts MPA on it as Initiator
// (see Client). On any error the TCP connection is closed, also after a
// rejecting Reply.
func Dial(ctx context.Context, network, addr string, cfg *Config) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("mpa: dial: %w", err)
	}
	c, err := Client(ctx, nc, cfg)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	return c, nil
}

// Client runs the Initiator side of the MPA startup phase on nc (RFC 5044
// §7.1.2 rules 1 and 3, RFC 6581 §5, §9): it sends the MPA Request Frame,
// waits for and validates the MPA Reply Frame and returns the Conn in Full
// Operation. ctx and Config.HandshakeTimeout bound the exchange.
func Client(ctx context.Context, nc net.Conn, cfg *Config) (*Conn, error) {
	// Errors: an improperly formatted Reply, or a Request received instead
	// (Initiator/Initiator startup), closes nc and returns an *llp.Error with
	// iwarp.Term.MPAInvalidFrame.Code (RFC 5044 §7.1.2 rules 3, 5, 8); a rejecting Reply
	// returns a *RejectError and leaves nc open for the caller (rule 3); an
	// accepting Reply that RFC 6581 obliges the Initiator to answer with a
	// Terminate (§9.1 insufficient IRD, §9.2 no matching RTR option or
	// connection model) sends that Terminate, closes nc and returns a
	// *NegotiationError.
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(true); err != nil {
		return nil, err
	}
	c := newConn(nc, cfg, true)
	req := Frame{
		Markers:     cfg.Markers,
		CRC:         !cfg.NoCRC,
		Rev:         cfg.revision(),
		Enhanced:    cfg.Enhanced,
		PrivateData: cfg.PrivateData,
	}
	if !cfg.Enhanced {
		// RFC 6581 §10: no enhanced formats when no enhanced function is
		// wanted; Rev 1 keeps RFC 5044-only responders happy.
		req.Rev = iwarpwire.MPARev1
	} else {
		req.IRDORD = iwarp.IRDORD{PeerToPeer: cfg.PeerToPeer, IRD: cfg.IRD, ORD: cfg.ORD}
		if cfg.PeerToPeer {
			req.IRDORD.RTR = cfg.rtr()
		}
	}
	stop := c.bound(ctx)
	rep, err := c.exchangeAsInitiator(&req)
	if err = stop(err); err != nil {
		return nil, err
	}
	return c.completeInitiator(ctx, &req, &rep)
}

func (c *Conn) exchangeAsInitiator(req *Frame) (Frame, error) {
	if _, err := c.nc.Write(req.Append(make([]byte, 0, req.len()))); err != nil {
		return Frame{}, fmt.Errorf("mpa: send MPA Request: %w", err)
	}
	rep, err := c.readFrame()
	if err != nil {
		return Frame{}, err
	}
	if !rep.Reply {
		// RFC 5044 §7.1.2 rule 8: Request and Reply keys differ so that
		// Initiator/Initiator startups are detected.
		_ = c.nc.Close()
		return Frame{}, frameError(errActiveActive, "")
	}
	if rep.Rev < iwarpwire.MPARev1 || rep.Rev > req.Rev {
		_ = c.nc.Close()
		return Frame{}, frameError(errRevision, "Reply revision %d to a revision %d Request (RFC 5044 §7.1.1)", rep.Rev, req.Rev)
	}
	if rep.Enhanced != req.Enhanced {
		// RFC 6581 §10: an enhanced Responder answers enhanced Requests
		// enhanced and unenhanced Requests unenhanced.
		_ = c.nc.Close()
		return Frame{}, frameError(errEnhancedMismatch, "Request S=%t, Reply S=%t (RFC 6581 §10)", req.Enhanced, rep.Enhanced)
	}
	return rep, nil
}

// completeInitiator applies the Reply (RFC 5044 §7.1.1 M and C, RFC 6581
// §9.1, §9.2) and, when RFC 6581 requires it, terminates the connection.
func (c *Conn) completeInitiator(ctx context.Context, req, rep *Frame) (*Conn, error) {
	if rep.Reject {
		// RFC 5044 §7.1.2 rule 3: exit MPA, leave TCP open for the ULP.
		return nil, &RejectError{Reply: *rep}
	}
	p := &c.params
	p.Revision = rep.Rev
	p.Enhanced = rep.Enhanced
	p.CRC = req.CRC || rep.CRC
	p.MarkersTx = rep.Markers
	p.MarkersRx = req.Markers
	p.PrivateData = req.PrivateData
	p.PeerPrivateData = rep.PrivateData
	p.IRD, p.ORD = c.cfg.IRD, c.cfg.ORD
	var fail *llp.Error
	if rep.Enhanced {
		v := rep.IRDORD
		p.PeerIRD, p.PeerORD = v.IRD, v.ORD
		// RFC 6581 §9.1: the Initiator sets its ORD at most to the
		// Responder IRD and its IRD at least to the Responder ORD; 0x3FFF
		// leaves the local value unchanged. The IRD cannot be raised past
		// the configured one, which is what this end can support: "If the
		// initiator does not have sufficient resources for the required
		// IRD, it MUST send a TERM message ... Error Code 6".
		local := iwarp.Depths{IRD: int(c.cfg.IRD), ORD: int(c.cfg.ORD)}
		d, err := iwarpwire.NegotiateInitiator(local, local.IRD, v)
		p.ORD = uint16(d.ORD)
		if err != nil {
			fail = newError(iwarp.Term.InsufficientIRD, err)
		} else if rtr, err := iwarpwire.NegotiateRTR(req.IRDORD, v); err != nil {
			// RFC 6581 §9.2: the Responder MUST echo Control Flag A; the
			// Initiator MUST generate one of the negotiated RTR indications
			// or send a TERM "indicating failure to negotiate a mutually
			// compatible connection model or RTR option ... Error Code 7".
			if v.PeerToPeer != req.IRDORD.PeerToPeer {
				err = fmt.Errorf("%w: %w", err, errEnhancedMismatch)
			}
			fail = newError(iwarp.Term.NoMatchingRTR, err)
		} else {
			p.PeerToPeer, p.RTR = v.PeerToPeer, rtr
		}
	}
	c.enterFullOperation()
	if fail != nil {
		termErr := c.terminateNegotiation(ctx, fail.TermCode())
		return nil, &NegotiationError{Err: fail, Params: c.params, TermErr: termErr}
	}
	return c, nil
}

// negotiationLinger bounds how long an Initiator that sent a negotiation
// Terminate waits for the Responder to close before it closes its socket.
const negotiationLinger = time.Second

// terminateNegotiation ends a connection whose enhanced negotiation failed
// on the Initiator (RFC 6581 §9.1, §9.2, §9.3): the Terminate carrying
// code goes out as the first FPDU, with the CRC and Markers just
// negotiated, and then the TCP connection is closed: FIN first (RFC 5044
// §7.2), then, once the Responder has closed its side or after
// negotiationLinger (ctx permitting), the socket, so that the close does
// not reset a connection whose Terminate may still be unread. It returns
// the error of sending the Terminate.
func (c *Conn) terminateNegotiation(ctx context.Context, code iwarp.TermCode) error {
	deadline := time.Now().Add(negotiationLinger)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.nc.SetDeadline(deadline)
	fired := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = c.nc.SetDeadline(time.Unix(1, 0))
	})
	var ulpdu [iwarpwire.EstablishmentTerminateLen]byte
	err := c.SendSegment(nil, iwarpwire.AppendEstablishmentTerminate(ulpdu[:0], code))
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.closeOnce.Do(func() { close(c.done) })
	c.txMu.Lock()
	c.txClosed = true
	c.txMu.Unlock()
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		_, _ = io.Copy(io.Discard, c.nc) // until the Responder's FIN or the deadline
	}
	if !stopAfter() {
		<-fired
	}
	c.mu.Lock()
	c.closeSocketLocked()
	c.mu.Unlock()
	return err
}

// Server runs the Responder side of the MPA startup phase on nc (RFC 5044
// §7.1.2 rules 2 and 4, RFC 6581 §9, §10): it waits for the MPA Request
// Frame, lets Config.Accept examine it, sends the MPA Reply Frame and
// returns the Conn in Full Operation. The Conn sends no FPDU before it has
// received one (rule 4). ctx and Config.HandshakeTimeout bound the wait
// (rule 8: Responder/Responder startups time out).
func Server(ctx context.Context, nc net.Conn, cfg *Config) (*Conn, error) {
	// Errors: an improperly formatted Request, an unsupported revision or a
	// Reply key closes nc and returns an *llp.Error with iwarp.Term.MPAInvalidFrame.Code;
	// an Accept error closes nc and returns it; a rejection sends the Reply
	// with R = 1, leaves nc open and returns an error matching ErrRejected.
	// An accepting Decision whose ORD exceeds the Initiator IRD is turned into
	// such a rejection naming that ORD (RFC 6581 §9.1), reported as an
	// *llp.Error with iwarp.Term.InsufficientIRD.Code matching ErrRejected and
	// ErrInsufficientIRD.
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	c := newConn(nc, cfg, false)
	stop := c.bound(ctx)
	rep, insufficient, err := c.exchangeAsResponder()
	if err = stop(err); err != nil {
		return nil, err
	}
	if insufficient != nil {
		return nil, fmt.Errorf("mpa: MPA Reply sent with R=1: %w", insufficient)
	}
	if rep.Reject {
		return nil, fmt.Errorf("mpa: MPA Reply sent with R=1: %w", errRejected)
	}
	c.enterFullOperation()
	return c, nil
}

// exchangeAsResponder reads the Request and sends the Reply. insufficient
// is non-nil when the Reply rejects because the Initiator IRD is below the
// ORD the ULP requires (RFC 6581 §9.1).
func (c *Conn) exchangeAsResponder() (rep *Frame, insufficient error, err error) {
	req, err := c.readFrame()
	if err != nil {
		return nil, nil, err
	}
	if req.Reply {
		_ = c.nc.Close()
		return nil, nil, frameError(errBadKey, "MPA Reply Frame received while waiting for a Request (RFC 5044 §7.1.2 rule 5)")
	}
	// RFC 5044 §7.1.1 Rev: close if we cannot interoperate. Revision 0 is
	// the RDMA Consortium protocol (RFC 5044 Appendix C), which this
	// non-permissive implementation does not speak; RFC 6581 §6 obliges a
	// revision-2 Responder to keep accepting revision 1.
	if req.Rev < iwarpwire.MPARev1 || req.Rev > c.cfg.revision() {
		_ = c.nc.Close()
		return nil, nil, frameError(errRevision, "Request revision %d, this end speaks 1..%d", req.Rev, c.cfg.revision())
	}
	d := Decision{}
	if c.cfg.Accept != nil {
		if d, err = c.cfg.Accept(&req); err != nil {
			_ = c.nc.Close()
			return nil, nil, fmt.Errorf("mpa: request refused: %w", err)
		}
	}
	pd := d.PrivateData
	if pd == nil {
		pd = c.cfg.PrivateData
	}
	rep = &Frame{
		Reply:   true,
		Markers: c.cfg.Markers,
		// RFC 5044 §7.1.1: C set in either frame puts CRCs in use, so
		// echoing the Initiator's C changes nothing on the wire; Linux
		// siw with mpa_crc_required rejects a Reply without it.
		CRC:         !c.cfg.NoCRC || req.CRC,
		Reject:      d.Reject,
		Rev:         req.Rev,
		Enhanced:    req.Enhanced, // RFC 6581 §10
		PrivateData: pd,
	}
	p := &c.params
	p.IRD, p.ORD = c.cfg.IRD, c.cfg.ORD
	if req.Enhanced {
		rep.IRDORD = c.responderIRDORD(req.IRDORD)
		if d.IRDORD != nil {
			rep.IRDORD.IRD, rep.IRDORD.ORD = iwarpwire.WireIRDORD(*d.IRDORD).IRD, iwarpwire.WireIRDORD(*d.IRDORD).ORD
			p.IRD, p.ORD = rep.IRDORD.IRD, rep.IRDORD.ORD
		}
		// RFC 6581 §9.1: "The responder MUST set its ORD at most to the
		// initiator IRD. The responder MAY reject the connection request
		// if the initiator IRD is not sufficient for the ULP-required ORD
		// and specify the required ORD in the MPA Reject Frame responder
		// ORD." An ULP that insists on more ORD than the Initiator can
		// Serve gets that Reject rather than an Accept breaking the MUST.
		if in, out := req.IRDORD.IRD, rep.IRDORD.ORD; !rep.Reject && in != iwarp.NoNegotiation && out != iwarp.NoNegotiation && out > in {
			rep.Reject = true
			insufficient = newError(iwarp.Term.InsufficientIRD, fmt.Errorf("%w: %w: the ULP requires ORD %d, the initiator IRD is %d (RFC 6581 §9.1)",
				errRejected, iwarp.ErrInsufficientIRD, out, in))
		}
		p.PeerIRD, p.PeerORD = req.IRDORD.IRD, req.IRDORD.ORD
		p.PeerToPeer, p.RTR = rep.IRDORD.PeerToPeer, rep.IRDORD.RTR
	}
	if err := rep.validate(); err != nil {
		_ = c.nc.Close()
		return nil, nil, newError(iwarp.Term.MPALocalCatastrophic, err)
	}
	if _, err := c.nc.Write(rep.Append(make([]byte, 0, rep.len()))); err != nil {
		return nil, nil, fmt.Errorf("mpa: send MPA Reply: %w", err)
	}
	p.Revision = rep.Rev
	p.Enhanced = rep.Enhanced
	p.CRC = req.CRC || rep.CRC
	p.MarkersTx = req.Markers
	p.MarkersRx = rep.Markers
	p.PrivateData = rep.PrivateData
	p.PeerPrivateData = req.PrivateData
	return rep, insufficient, nil
}

// responderIRDORD computes the Reply's IRD/ORD data and this end's values
// from the Request's (RFC 6581 §9.1, §9.2; the rules are iwarp's, shared
// with the SCTP adaptation). The Responder does not raise its IRD beyond
// the configured one except for a Read RTR (iwarpwire.NegotiateResponder).
func (c *Conn) responderIRDORD(in iwarp.IRDORD) iwarp.IRDORD {
	local := iwarp.Depths{IRD: int(c.cfg.IRD), ORD: int(c.cfg.ORD)}
	out, d := iwarpwire.NegotiateResponder(local, local.IRD, c.cfg.rtr(), in)
	c.params.IRD, c.params.ORD = uint16(d.IRD), uint16(d.ORD)
	return out
}

// readFrame reads one startup frame, enforcing the private data limit
// (RFC 5044 §7.1.2 rule 9), and copies its private data out of the receive
// buffer. Octets after the frame stay buffered for the FPDU receiver.
func (c *Conn) readFrame() (Frame, error) {
	if err := c.fill(iwarpwire.MPAFrameHeaderLen); err != nil {
		return Frame{}, fmt.Errorf("mpa: read startup frame: %w", c.startupReadErr(err))
	}
	n, err := FrameLen(c.rx.buffered())
	if err != nil {
		_ = c.nc.Close()
		return Frame{}, err
	}
	if pd := n - iwarpwire.MPAFrameHeaderLen; pd > c.cfg.maxPrivateData() {
		_ = c.nc.Close()
		return Frame{}, frameError(errPrivateDataLength, "PD_Length %d exceeds the accepted %d (RFC 5044 §7.1.2 rule 9)", pd, c.cfg.maxPrivateData())
	}
	if err := c.fill(n); err != nil {
		return Frame{}, fmt.Errorf("mpa: read startup frame: %w", c.startupReadErr(err))
	}
	f, _, err := ParseFrame(c.rx.buffered())
	if err != nil {
		_ = c.nc.Close()
		return Frame{}, err
	}
	f.PrivateData = append([]byte(nil), f.PrivateData...)
	if len(f.PrivateData) == 0 {
		f.PrivateData = nil
	}
	c.rx.r += n
	return f, nil
}

func (c *Conn) startupReadErr(err error) error {
	return newError(iwarp.Term.MPAConnectionLost, fmt.Errorf("%w: %w", ErrConnectionLost, err))
}

// bound applies ctx and the handshake timeout to nc for the startup phase.
// The returned stop function clears them and, if ctx ended the exchange,
// returns an error wrapping ctx.Err().
func (c *Conn) bound(ctx context.Context) func(error) error {
	deadline, has := ctx.Deadline()
	if t := c.cfg.HandshakeTimeout; t >= 0 {
		if t == 0 {
			t = defaultHandshakeTimeout
		}
		if d := time.Now().Add(t); !has || d.Before(deadline) {
			deadline, has = d, true
		}
	}
	if has {
		_ = c.nc.SetDeadline(deadline)
	}
	fired := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = c.nc.SetDeadline(time.Unix(1, 0))
	})
	return func(err error) error {
		if !stopAfter() {
			<-fired
		}
		_ = c.nc.SetDeadline(time.Time{})
		if err == nil {
			return nil
		}
		cerr := ctx.Err()
		if d, ok := ctx.Deadline(); ok && cerr == nil && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(d) {
			cerr = context.DeadlineExceeded // the socket deadline was ctx's
		}
		if cerr != nil {
			_ = c.nc.Close()
			return fmt.Errorf("mpa: startup phase: %w (%w)", cerr, err)
		}
		return err
	}
}
