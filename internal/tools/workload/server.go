package workload

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// serverResult is the server's verdict on one stream.
type serverResult struct {
	err       error
	end       error
	erroneous bool
}

// serverStream is the passive side of one stream: it registers its target
// region and an STag the client may invalidate, keeps Window receive
// buffers posted, advertises, verifies every message and answers every
// sync.
type serverStream struct {
	r    *run
	p    *plan
	sid  uint16
	bufs [][]byte

	target, inv *rdmap.MR
	immOff      uint64
	counterOff  uint64
	received    uint32 // messages taken so far: the next one's number
}

// prepare posts the receive buffers before the endpoint starts, so that
// no message of the client can find none.
func (s *serverStream) prepare(ep *rdmap.Endpoint) error {
	s.bufs = make([][]byte, s.r.cfg.Window)
	for i := range s.bufs {
		s.bufs[i] = make([]byte, max(s.p.hi, 8)) // Immediate Data: 8 octets (RFC 7306 §6.3)
		if err := ep.PostRecv(uint64(i), s.bufs[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *serverStream) serve(ctx context.Context, st *streams.Stream) serverResult {
	err := s.run(ctx, st)
	if err != nil {
		_ = st.Endpoint.Abort()
	}
	select {
	case <-st.Done():
	case <-ctx.Done():
		_ = st.Endpoint.Abort()
		<-st.Done()
	}
	res := serverResult{err: err, end: st.Endpoint.Err(), erroneous: st.Erroneous()}
	if res.err == nil {
		res.err = s.judgeEnd(st)
	}
	return res
}

// judgeEnd checks how the stream ended against the client's intent.
func (s *serverStream) judgeEnd(st *streams.Stream) error {
	end := st.Endpoint.Err()
	switch {
	case s.p.broken:
		// RFC 5041 §7.2, RFC 5040 §7: this side sent the Terminate for the
		// segment with an invalid STag and labelled the stream erroneous.
		var te *rdmap.TerminateError
		if !errors.As(end, &te) || te.Remote || te.Code != iwarp.Term.DDPInvalidSTag {
			return fmt.Errorf("broken stream ended with %v, want a Terminate sent for an invalid STag (RFC 5041 §7.2)", end)
		}
		if !st.Erroneous() {
			return errors.New("broken stream not labelled erroneous (RFC 5040 §7)")
		}
	case s.p.killed.Load():
		// Killed on purpose: any end is as intended.
	default:
		if !errors.Is(end, rdmap.ErrPeerClosed) && !errors.Is(end, rdmap.ErrClosed) {
			return fmt.Errorf("after the client's close: %w", end)
		}
		if st.Erroneous() {
			return errors.New("intact stream labelled erroneous")
		}
	}
	return nil
}

func (s *serverStream) run(ctx context.Context, st *streams.Stream) error {
	ep := st.Endpoint
	hi := uint64(s.p.hi)
	s.immOff = (hi + 7) &^ 7
	s.counterOff = s.immOff + (hi+7)&^7 // 8-aligned for the atomics (RFC 7306 §5.1)
	var err error
	s.target, err = s.r.spd.Register(make([]byte, s.counterOff+8),
		rdmap.LocalWrite|rdmap.RemoteWrite|rdmap.RemoteRead|rdmap.RemoteAtomic, rdmap.MROption{Endpoint: ep})
	if err != nil {
		return err
	}
	defer s.target.Deregister()
	s.inv, err = s.r.spd.Register(make([]byte, 64), rdmap.RemoteRead, rdmap.MROption{Endpoint: ep}, rdmap.MROption{RemoteInvalidate: true})
	if err != nil {
		return err
	}
	defer s.inv.Deregister()

	adv := advert{target: Region{STag: s.target.STag(), TO: s.target.BaseTO(), Length: uint64(len(s.target.Bytes()))}, invSTag: s.inv.STag(), max: uint32(hi), window: uint32(len(s.bufs)),
		immOff: s.immOff, counterOff: s.counterOff}
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: adv.bytes()}); err != nil {
		if s.p.broken || s.p.killed.Load() {
			// The Terminate the client provokes may flush the advertisement
			// before its completion is reported (RFC 5040 §5.5 rule 14 vs
			// §6.2.1).
			return nil
		}
		return fmt.Errorf("advertise: %w", err)
	}
	for {
		c, err := ep.Config().RecvCQ.Poll(ctx)
		if err != nil {
			return err
		}
		if c.Err != nil {
			return nil // flushed: the stream ended; judgeEnd says whether as intended
		}
		isSync, err := s.check(c)
		if err != nil {
			return fmt.Errorf("message %d: %w", s.received, err)
		}
		s.received++
		if err := ep.PostRecv(c.WRID, s.bufs[c.WRID]); err != nil {
			return nil // the stream is ending
		}
		if isSync {
			counter := binary.NativeEndian.Uint64(s.target.Bytes()[s.counterOff:])
			p := pong{invSTag: s.inv.STag(), received: s.received, counter: counter}
			if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: p.bytes()}); err != nil {
				return nil // the stream is ending
			}
		}
	}
}

// check verifies received message number s.received and reports whether
// it is a sync.
func (s *serverStream) check(c rdmap.Completion) (isSync bool, err error) {
	if c.WRID >= uint64(len(s.bufs)) {
		return false, fmt.Errorf("completion for unknown receive %d", c.WRID)
	}
	msg := s.received
	if c.HasImm {
		kind, se, seq, value := splitImm(c.Imm)
		if seq != msg&immSeqMask {
			return false, fmt.Errorf("immediate data %#x is message %d", c.Imm, seq)
		}
		if se != c.Solicited {
			return false, fmt.Errorf("immediate data %#x: solicited %v, the value says %v", c.Imm, c.Solicited, se)
		}
		switch kind {
		case kindImm, kindSync:
			if value != immCheck(s.sid, msg) {
				return false, fmt.Errorf("immediate data %#x: check value %#x, want %#x", c.Imm, value, immCheck(s.sid, msg))
			}
			return kind == kindSync, nil
		case kindWriteImm:
			// RFC 7306 §6: the Write before the Immediate Data is placed.
			if uint64(value) > uint64(s.p.hi) {
				return false, fmt.Errorf("write with immediate of %d octets, largest %d", value, s.p.hi)
			}
			area := s.target.Bytes()[s.immOff : s.immOff+uint64(value)]
			if i := mismatch(area, seed(s.sid, msg, int(value), kindWriteImm)); i >= 0 {
				return false, fmt.Errorf("write-with-immediate data of %d octets differs at the target from octet %d", value, i)
			}
			return false, nil
		}
		return false, fmt.Errorf("immediate data %#x of unknown kind", c.Imm)
	}
	invalidated := c.InvalidatedSTag != 0
	if invalidated {
		// RFC 5040 §5.3: the Send with Invalidate named the advertised STag
		// (rdmap reports it once the STag is invalid).
		if c.InvalidatedSTag != s.inv.STag() {
			return false, fmt.Errorf("send with invalidate of %#x (advertised %#x)",
				c.InvalidatedSTag, s.inv.STag())
		}
		// A new key for the next one (RFC 5040 §8.1.1 item 4); the client
		// learns it from the next sync answer.
		if err := s.inv.Reregister(s.inv.Bytes(), rdmap.RemoteRead); err != nil {
			return false, err
		}
	}
	kind := sendKind(c.Solicited, invalidated)
	if i := mismatch(s.bufs[c.WRID][:c.Length], seed(s.sid, msg, c.Length, kind)); i >= 0 {
		return false, fmt.Errorf("%c payload of %d octets differs from octet %d", kind, c.Length, i)
	}
	return false, nil
}
