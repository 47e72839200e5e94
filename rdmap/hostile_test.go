package rdmap

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// hostileEnv is what a crafted-input case may use.
type hostileEnv struct {
	v                *victim
	rw, ro, at, none *MR // RemoteWrite, RemoteRead, RemoteAtomic, no remote rights
	bound            *MR // RemoteWrite|RemoteRead, bound to another endpoint
	otherPD          *MR // RemoteWrite|RemoteRead in another PD
	wrap             *MR // RemoteRead|RemoteWrite with base TO near 2^64
	inv              *MR // remote-invalidate permitted, bound to the victim
	invShared        *MR // remote-invalidate permitted but not bound (shared)
	sink             *MR // LocalWrite, victim's read sink
	bufs             map[*MR][]byte
}

const wrapBase = math.MaxUint64 - 4095

func newHostile(t *testing.T, cfg EndpointConfig, recvs int) *hostileEnv {
	h := &hostileEnv{bufs: map[*MR][]byte{}}
	reg := func(pd *PD, n int, a Access, opts ...MROption) *MR {
		b := make([]byte, n)
		m, err := pd.Register(b, a, opts...)
		require.NoError(t, err)
		h.bufs[m] = b
		return m
	}
	h.v = newVictim(t, cfg, func(v *victim) {
		h.rw = reg(v.pd, 4096, RemoteWrite)
		h.ro = reg(v.pd, 4096, RemoteRead)
		h.at = reg(v.pd, 64, RemoteAtomic)
		h.none = reg(v.pd, 64, LocalWrite)
		// A second endpoint of the same PD, never started, to bind to.
		a, _ := newPipes()
		other, err := v.pd.NewEndpoint(a, EndpointConfig{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Close(t.Context()) })
		h.bound = reg(v.pd, 64, RemoteWrite|RemoteRead, MROption{Endpoint: other})
		h.otherPD = reg(v.dev.AllocPD(), 64, RemoteWrite|RemoteRead)
		h.wrap = reg(v.pd, 4096, RemoteRead|RemoteWrite, MROption{BaseTO: wrapBase})
		h.inv = reg(v.pd, 64, RemoteWrite, MROption{Endpoint: v.ep}, MROption{RemoteInvalidate: true})
		h.invShared = reg(v.pd, 64, RemoteWrite, MROption{RemoteInvalidate: true})
		h.sink = reg(v.pd, 4096, LocalWrite)
		for i := range recvs {
			require.NoError(t, v.ep.PostRecv(uint64(i), make([]byte, 64)))
		}
	})
	return h
}

func readReq(sink uint32, sinkTO uint64, size uint32, src uint32, srcTO uint64) []byte {
	r := readRequest{SinkSTag: sink, SinkTO: sinkTO, Size: size, SrcSTag: src, SrcTO: srcTO}
	return r.append(nil)
}

// TestTerminateOnTheWire checks layer/type/code, header copies and that
// exactly one Terminate is sent, for every Terminate this endpoint can
// generate from incoming data (RFC 5040 §4.8, §7.1, §7.2; RFC 5041 §7.2;
// RFC 7306 §8.2).
func TestTerminateOnTheWire(t *testing.T) {
	type tc = hostileCase
	w := func(h *hostileEnv) *wire { return h.v.w }
	ctl := iwarpwire.RDMAPControlByte
	cases := []tc{
		{name: "Write invalid STag (RFC 5041 §7.1 tagged 1)", want: iwarp.Term.DDPInvalidSTag,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpWrite), h.rw.STag()^0x100, 0, []byte{1})}
			}},
		{name: "Write stale key", want: iwarp.Term.DDPInvalidSTag,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpWrite), h.rw.STag()^1, 0, []byte{1})}
			}},
		{name: "Write base/bounds (RFC 5041 §7.1 tagged 4)", want: iwarp.Term.DDPBaseBounds,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpWrite), h.rw.STag(), 4095, []byte{1, 2})}
			}},
		{name: "Write TO below base", want: iwarp.Term.DDPBaseBounds,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpWrite), h.wrap.STag(), 5, []byte{1})}
			}},
		{name: "Write STag of another stream (RFC 5041 §8.2)", want: iwarp.Term.DDPSTagNotAssociated,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpWrite), h.bound.STag(), 0, []byte{1})}
			}},
		{name: "Write STag of another PD", want: iwarp.Term.DDPSTagNotAssociated,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpWrite), h.otherPD.STag(), 0, []byte{1})}
			}},
		{name: "Write TO wrap (RFC 5041 §7.1 tagged 5)", want: iwarp.Term.DDPTOWrap,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpWrite), h.wrap.STag(), math.MaxUint64-1, []byte{1, 2, 3})}
			}},
		{name: "Write without remote write access (RFC 5041 §7.1 tagged 1, RFC 5040 Figure 10)", want: iwarp.Term.DDPInvalidSTag,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpWrite), h.ro.STag(), 0, []byte{1})}
			}},
		{name: "tagged DDP version", want: iwarp.Term.DDPTaggedVersion,
			segs: func(h *hostileEnv) [][]byte {
				s := tagged(ctl(iwarp.RDMAPOpWrite), h.rw.STag(), 0, []byte{1})
				s[0] = 0xc2 // DV = 2
				return [][]byte{s}
			}},
		{name: "Read Request invalid STag (RFC 5040 §7.2 4a)", want: iwarp.Term.InvalidSTag, r: true,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 8, h.ro.STag()^0x100, 0))}
			}},
		{name: "Read Request STag of another stream (4b)", want: iwarp.Term.STagNotAssociated, r: true,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 8, h.bound.STag(), 0))}
			}},
		{name: "Read Request other PD (4b)", want: iwarp.Term.STagNotAssociated, r: true,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 8, h.otherPD.STag(), 0))}
			}},
		{name: "Read Request bounds (4c/4d)", want: iwarp.Term.BaseBounds, r: true,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 4097, h.ro.STag(), 0))}
			}},
		{name: "Read Request TO wrap (4e)", want: iwarp.Term.TOWrap, r: true,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 16, h.wrap.STag(), math.MaxUint64-7))}
			}},
		{name: "Read Request without remote read access", want: iwarp.Term.AccessRights, r: true,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 8, h.rw.STag(), 0))}
			}},
		{name: "Read Request of wrong length", want: iwarp.Term.OperationUnspecified,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 8, h.ro.STag(), 0)[:20])}
			}},
		{name: "IRD exceeded (RFC 5040 §6.1, siw code)", want: iwarp.Term.CatastrophicStream, r: true, cfg: EndpointConfig{IRD: -1},
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 8, h.ro.STag(), 0))}
			}},
		{name: "Send with Invalidate unknown STag (siw: remote operation)", want: iwarp.Term.OperationCannotInvalidate, recvs: 1,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpSendInvalidate), h.inv.STag()^0x100, 0, []byte("x"))}
			}},
		{name: "Send with Invalidate not permitted", want: iwarp.Term.ProtectionCannotInvalidate, recvs: 1,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpSendSEInvalidate), h.rw.STag(), 0, []byte("x"))}
			}},
		{name: "Send with Invalidate of a shared STag (RFC 5040 §8.1.1 item 7)", want: iwarp.Term.ProtectionCannotInvalidate, recvs: 1,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpSendInvalidate), h.invShared.STag(), 0, []byte("x"))}
			}},
		{name: "invalid RDMAP version untagged (RFC 5040 §7.2 3)", want: iwarp.Term.InvalidVersion, recvs: 1,
			segs: func(h *hostileEnv) [][]byte { return [][]byte{w(h).untagged(0x03, 0, 0, []byte("x"))} }},
		{name: "invalid RDMAP version tagged", want: iwarp.Term.InvalidVersion,
			segs: func(h *hostileEnv) [][]byte { return [][]byte{tagged(0x80, h.rw.STag(), 0, []byte{1})} }},
		{name: "reserved opcode (RFC 5040 §7.2 2)", want: iwarp.Term.UnexpectedOpcode, recvs: 1,
			segs: func(h *hostileEnv) [][]byte { return [][]byte{w(h).untagged(0x4c, 0, 0, []byte("x"))} }},
		{name: "Send on the Read Request queue", want: iwarp.Term.UnexpectedOpcode,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpSend), 0, 1, []byte("x"))}
			}},
		{name: "untagged opcode in a tagged segment", want: iwarp.Term.UnexpectedOpcode,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpSend), h.rw.STag(), 0, []byte{1})}
			}},
		{name: "Read Response without a Read", want: iwarp.Term.UnexpectedOpcode,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpReadResponse), h.sink.STag(), 0, []byte{1})}
			}},
		{name: "Atomic Response without an Atomic", want: iwarp.Term.UnexpectedOpcode,
			segs: func(h *hostileEnv) [][]byte {
				r := atomicResponse{ReqID: 1}
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpAtomicResponse), 0, 3, r.Append(nil))}
			}},
		{name: "Atomic misaligned (RFC 7306 §8.2)", want: iwarp.Term.CatastrophicStream,
			segs: func(h *hostileEnv) [][]byte {
				a := atomicRequest{Op: atomicFetchAdd, ReqID: 1, STag: h.at.STag(), TO: 4, Data: 1}
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpAtomicRequest), 0, 1, a.Append(nil))}
			}},
		{name: "Atomic without remote atomic access", want: iwarp.Term.AccessRights,
			segs: func(h *hostileEnv) [][]byte {
				a := atomicRequest{Op: atomicFetchAdd, ReqID: 1, STag: h.rw.STag(), TO: 0, Data: 1}
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpAtomicRequest), 0, 1, a.Append(nil))}
			}},
		{name: "Atomic bounds", want: iwarp.Term.BaseBounds,
			segs: func(h *hostileEnv) [][]byte {
				a := atomicRequest{Op: atomicCmpSwap, ReqID: 1, STag: h.at.STag(), TO: 64}
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpAtomicRequest), 0, 1, a.Append(nil))}
			}},
		{name: "Atomic reserved AOpCode 0x1 (RFC 7306 §5.2.1 rule 4)", want: iwarp.Term.UnexpectedOpcode,
			segs: func(h *hostileEnv) [][]byte {
				a := atomicRequest{Op: 1, ReqID: 1, STag: h.at.STag()}
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpAtomicRequest), 0, 1, a.Append(nil))}
			}},
		{name: "Immediate Data of 4 octets (RFC 7306 §6.3)", want: iwarp.Term.OperationUnspecified, recvs: 1,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpImmediate), 0, 0, []byte{1, 2, 3, 4})}
			}},
		{name: "Immediate Data of 9 octets", want: iwarp.Term.OperationUnspecified, recvs: 1,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpImmediateSE), 0, 0, make([]byte, 9))}
			}},
		{name: "DDP no buffer (RFC 5041 §7.2 0x2/0x02)", want: iwarp.Term.DDPNoBuffer,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpSend), 0, 0, []byte("x"))}
			}},
		{name: "DDP invalid QN", want: iwarp.Term.DDPInvalidQN,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpSend), 0, 5, []byte("x"))}
			}},
		{name: "DDP MSN range", want: iwarp.Term.DDPMSNRange, recvs: 1,
			segs: func(h *hostileEnv) [][]byte {
				w(h).msn[0] = 7
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpSend), 0, 0, []byte("x"))}
			}},
		{name: "DDP message too long", want: iwarp.Term.DDPMessageTooLong, recvs: 1,
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{w(h).untagged(ctl(iwarp.RDMAPOpSend), 0, 0, make([]byte, 65))}
			}},
		{name: "DDP invalid MO", want: iwarp.Term.DDPInvalidMO, recvs: 1,
			segs: func(h *hostileEnv) [][]byte {
				s := w(h).untagged(ctl(iwarp.RDMAPOpSend), 0, 0, []byte("x"))
				binary.BigEndian.PutUint32(s[14:18], 64)
				return [][]byte{s}
			}},
		{name: "DDP untagged version", want: iwarp.Term.DDPUntaggedVersion, recvs: 1,
			segs: func(h *hostileEnv) [][]byte {
				s := w(h).untagged(ctl(iwarp.RDMAPOpSend), 0, 0, []byte("x"))
				s[0] = 0x42
				return [][]byte{s}
			}},
		{name: "DDP segment shorter than its header", want: iwarp.Term.DDPLocalCatastrophic, noDDP: true,
			segs: func(h *hostileEnv) [][]byte { return [][]byte{{0x41, 0x43, 0}} }},
		{name: "Read Response STag mismatch", want: iwarp.Term.DDPInvalidSTag,
			before: func(t *testing.T, h *hostileEnv) {
				require.NoError(t, h.v.ep.postSend1(SendWR{ID: 1, Op: WRRead, Sink: h.sink, Length: 16, RemoteSTag: 0x1234}))
			},
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpReadResponse), h.sink.STag()^1, 0, make([]byte, 16))}
			}},
		{name: "Read Response beyond the requested range", want: iwarp.Term.DDPBaseBounds,
			before: func(t *testing.T, h *hostileEnv) {
				require.NoError(t, h.v.ep.postSend1(SendWR{ID: 1, Op: WRRead, Sink: h.sink, SinkOffset: 8, Length: 16, RemoteSTag: 0x1234}))
			},
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpReadResponse), h.sink.STag(), 16, make([]byte, 16))}
			}},
		{name: "Read Response short", want: iwarp.Term.DDPBaseBounds,
			before: func(t *testing.T, h *hostileEnv) {
				require.NoError(t, h.v.ep.postSend1(SendWR{ID: 1, Op: WRRead, Sink: h.sink, Length: 16, RemoteSTag: 0x1234}))
			},
			segs: func(h *hostileEnv) [][]byte {
				return [][]byte{tagged(ctl(iwarp.RDMAPOpReadResponse), h.sink.STag(), 0, make([]byte, 8))}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runHostile(t, c) })
	}
}

// hostileCase is one crafted-input scenario.
type hostileCase struct {
	name   string
	cfg    EndpointConfig
	recvs  int
	segs   func(h *hostileEnv) [][]byte // the last one is the offending segment
	want   iwarp.TermCode
	r      bool // RDMA header expected
	noDDP  bool // no DDP header expected
	before func(t *testing.T, h *hostileEnv)
}

// runHostile injects the case's segments into a fresh victim and checks the
// Terminate on the wire, the local error and that exactly one Terminate is
// sent and nothing is placed afterwards.
func runHostile(t *testing.T, c hostileCase) *hostileEnv {
	ctl := iwarpwire.RDMAPControlByte
	h := newHostile(t, c.cfg, c.recvs)
	v := h.v
	if c.before != nil {
		c.before(t, h)
		// Let the victim's request reach the wire first.
		select {
		case <-v.w.segs:
		case <-time.After(5 * time.Second):
			t.Fatal("request not sent")
		}
	}
	segs := c.segs(h)
	for _, s := range segs {
		v.w.inject(t, s)
	}
	tm, _ := v.w.terminate(t)
	assert.Equal(t, c.want, tm.Code, "got %v", tm.Code)
	bad := segs[len(segs)-1]
	if c.noDDP {
		assert.False(t, tm.D)
	} else {
		require.True(t, tm.D, "DDP header included")
		assert.True(t, tm.M)
		hl := iwarpwire.DDPUntaggedHeaderLen
		if bad[0]&0x80 != 0 {
			hl = iwarpwire.DDPTaggedHeaderLen
		}
		assert.Equal(t, bad[:hl], tm.DDPHeader, "terminated DDP header (RFC 5040 §4.8)")
		assert.Equal(t, uint16(len(bad)), tm.SegmentLen)
	}
	assert.Equal(t, c.r, tm.R, "RDMA header")
	if c.r {
		want, _, err := parseReadRequest(bad[iwarpwire.DDPUntaggedHeaderLen:])
		require.NoError(t, err)
		assert.Equal(t, want, tm.RDMAHeader)
	}
	var te *TerminateError
	require.True(t, errors.As(v.ep.Err(), &te))
	assert.False(t, te.Remote)
	assert.Equal(t, c.want, te.Code)
	// The next post names the cause, not only "closed" (issue 19).
	perr := v.ep.postSend1(SendWR{Op: WRSend, Local: []byte("x")})
	require.ErrorIs(t, perr, ErrClosed)
	var pte *TerminateError
	require.True(t, errors.As(perr, &pte), "%v", perr)
	assert.Equal(t, c.want, pte.Code)
	_, perr = v.ep.postRecv(recvWR{Buf: make([]byte, 8)}, nil)
	assert.True(t, errors.As(perr, &pte), "%v", perr)
	// Anything injected after the error is silently dropped (RFC 5041 §7.1).
	v.w.inject(t, tagged(ctl(iwarp.RDMAPOpWrite), h.rw.STag(), 0, []byte{0xee}))
	assert.Equal(t, 1, v.w.finish(t, v.ep, v.pipe, 1), "exactly one Terminate")
	assert.Zero(t, h.bufs[h.rw][0], "nothing placed after the error")
	return h
}

// IRD exceeded with queued requests: a responder busy on a large response
// and IRD queued requests, then one more (RFC 5040 §6.1, §8.1.1 item 11).
func TestTerminate_IRDExceeded_Queued_RFC5040_8_1_1_Item11(t *testing.T) {
	h := newHostile(t, EndpointConfig{IRD: 2}, 0)
	v := h.v
	v.pipe.SetMULPDU(128) // a 4 KiB response is ~36 segments
	// The responder stalls in its first Read Response segment until
	// released, so the requests that follow queue behind it whatever the
	// scheduling: one being answered and one waiting fill IRD=2.
	big := readReq(1, 0, 4096, h.ro.STag(), 0)
	release := holdReadResponse(t, v, big)
	for range 2 {
		v.w.inject(t, v.w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadRequest), 0, 1, big))
	}
	require.Eventually(t, func() bool { return v.ep.Err() != nil }, 5*time.Second, time.Millisecond,
		"the third outstanding Read Request exceeds IRD=2")
	release()
	tm, _ := v.w.terminate(t)
	assert.Equal(t, iwarp.Term.CatastrophicStream, tm.Code, "%v", v.ep.Err())
	assert.True(t, tm.R)
	v.w.finish(t, v.ep, v.pipe, 1)
}

// A Terminate received is surfaced with Remote=true and its fields, and
// never answered with a Terminate (RFC 5040 §5.4).
func TestTerminate_Received_RFC5040_5_4(t *testing.T) {
	h := newHostile(t, EndpointConfig{}, 3)
	v := h.v
	require.NoError(t, v.ep.postSend1(SendWR{ID: 9, Op: WRRead, Sink: h.sink, Length: 8, RemoteSTag: 5}))
	<-v.w.segs
	hdr := termUntaggedDDP
	tm := termHeader{Code: iwarp.Term.AccessRights, M: true, D: true, R: true, SegmentLen: 46, DDPHeader: hdr,
		RDMAHeader: readRequest{SinkSTag: 1, Size: 8, SrcSTag: 5}}
	v.w.inject(t, v.w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpTerminate), 0, 2, tm.append(nil)))
	waitDone2 := func() {
		_ = v.w.pipe.Close()
		waitDone(t, v.ep)
	}
	require.Eventually(t, func() bool { return v.ep.Err() != nil }, 5*time.Second, time.Millisecond)
	var te *TerminateError
	require.ErrorAs(t, v.ep.Err(), &te)
	assert.True(t, te.Remote)
	assert.Equal(t, iwarp.Term.AccessRights, te.Code)
	assert.Equal(t, hdr, te.DDPHeader)
	rr, _, err := parseReadRequest(te.RDMAHeader)
	require.NoError(t, err)
	assert.Equal(t, uint32(5), rr.SrcSTag)
	// Every posted WR is flushed exactly once, carrying the TerminateError.
	c := poll(t, v.ep.Config().SendCQ)
	assert.Equal(t, uint64(9), c.WRID)
	assert.ErrorIs(t, c.Err, ErrFlushed)
	var got *TerminateError
	require.ErrorAs(t, c.Err, &got)
	assert.True(t, got.Remote)
	for i := range 3 {
		c := poll(t, v.ep.Config().RecvCQ)
		assert.Equal(t, uint64(i), c.WRID)
		assert.ErrorIs(t, c.Err, ErrFlushed)
	}
	_, ok := v.ep.Config().SendCQ.tryPoll()
	assert.False(t, ok)
	waitDone2()
	<-v.pipe.Done()
	<-v.w.pipe.Done()
	n := 0
	for len(v.w.segs) > 0 {
		if _, ok := asTerminate(<-v.w.segs); ok {
			n++
		}
	}
	assert.Zero(t, n, "a received Terminate is not answered")
}

// Flush: after a Terminate, every posted work request (send queue,
// outstanding reads/atomics, receive queue) completes exactly once with a
// flush error, in order (RFC 5040 §5.4, §6.2.1).
func TestFlush_ExactlyOnce_RFC5040_6_2_1(t *testing.T) {
	var src, sink, tgt *MR
	p := newPair(t, EndpointConfig{ORD: 2, SQDepth: 200, RQDepth: 100}, EndpointConfig{IRD: 2}, func(p *pair) {
		var err error
		src, err = p.pdB.Register(make([]byte, 1<<20), RemoteRead|RemoteAtomic)
		require.NoError(t, err)
		sink, err = p.pdA.Register(make([]byte, 1<<20), LocalWrite)
		require.NoError(t, err)
		tgt, err = p.pdB.Register(make([]byte, 64), RemoteWrite)
		require.NoError(t, err)
	})
	for i := range 100 {
		require.NoError(t, p.a.PostRecv(uint64(1000+i), make([]byte, 8)))
	}
	for i := range 150 {
		var wr SendWR
		switch i % 4 {
		case 0:
			wr = SendWR{Op: WRRead, Sink: sink, Length: 1 << 20, RemoteSTag: src.STag()}
		case 1:
			wr = SendWR{Op: WRFetchAdd, RemoteSTag: src.STag(), Add: 1}
		case 2:
			wr = SendWR{Op: WRWrite, Local: []byte{1}, RemoteSTag: tgt.STag()}
		case 3:
			// Invalid: B terminates on it somewhere in the middle.
			wr = SendWR{Op: WRWrite, Local: []byte{1}, RemoteSTag: tgt.STag(), RemoteTO: uint64(i)}
		}
		wr.ID = uint64(i)
		require.NoError(t, p.a.postSend1(wr))
	}
	seen := map[uint64]int{}
	flushed := 0
	for len(seen) < 250 {
		var c Completion
		select {
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d completions", len(seen))
		default:
		}
		if cc, ok := p.cqA.tryPoll(); ok {
			c = cc
		} else if cc, ok := p.rcqA.tryPoll(); ok {
			c = cc
		} else {
			time.Sleep(time.Millisecond)
			continue
		}
		seen[c.WRID]++
		if errors.Is(c.Err, ErrFlushed) {
			flushed++
			require.ErrorIs(t, c.Err, ErrFlushed)
			var te *TerminateError
			require.ErrorAs(t, c.Err, &te)
			assert.True(t, te.Remote)
			assert.Equal(t, iwarp.Term.DDPBaseBounds, te.Code)
		}
	}
	for id, n := range seen {
		require.Equal(t, 1, n, "WR %d completed %d times", id, n)
	}
	assert.Greater(t, flushed, 100)
	waitDone(t, p.a)
	waitDone(t, p.b)
	assert.Zero(t, p.cqA.queued()+p.rcqA.queued(), "nothing completed twice")
}
