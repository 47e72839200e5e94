package rdmap

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// TestRTR_EndToEnd_RFC6581_9_2: for each RTR option the Initiator's first
// message is the RTR, posted before Start; the Responder consumes it
// without a completion and the first real Send completes its first
// receive.
func TestRTR_EndToEnd_RFC6581_9_2(t *testing.T) {
	for _, opt := range []iwarp.RTR{iwarp.RTRSend, iwarp.RTRWrite, iwarp.RTRRead} {
		t.Run(opt.String(), func(t *testing.T) {
			p := newPair(t, EndpointConfig{SendRTR: opt}, EndpointConfig{ExpectRTR: opt}, func(p *pair) {
				// Posted before Start: it must still leave after the RTR.
				require.NoError(t, p.a.postSend1(SendWR{ID: 7, Op: WRSend, Local: []byte("first")}))
				require.NoError(t, p.b.PostRecv(9, make([]byte, 16)))
			})
			c := poll(t, p.cqA)
			assert.Equal(t, uint64(7), c.WRID, "the RTR has no completion at the Initiator")
			require.NoError(t, c.Err)
			r := poll(t, p.rcqB)
			assert.Equal(t, uint64(9), r.WRID)
			assert.Equal(t, 5, r.Length)
			// Reads still work afterwards (the Read RTR freed its ORD slot).
			src, err := p.pdB.Register([]byte("remote!!"), RemoteRead)
			require.NoError(t, err)
			sink, err := p.pdA.Register(make([]byte, 8), LocalWrite)
			require.NoError(t, err)
			require.NoError(t, p.a.read(ctx5(t), sink, 0, 8, src.STag(), 0))
			assert.Equal(t, "remote!!", string(sink.Bytes()))
			assert.Equal(t, 0, p.cqA.queued(), "no completion besides the user's")
			assert.Equal(t, 0, p.rcqB.queued())
		})
	}
}

// TestRTR_WireImage_RFC6581_9_2 checks the exact first segment of each RTR
// option: zero-length Write and Read with STag 1 (as Linux siw sends) and
// a zero-length Send with MSN 1. DDP control octet: T|L|DV=01 (RFC 5041
// §4.2), RDMAP control octet: version 01, opcode (RFC 5040 §4.1).
func TestRTR_WireImage_RFC6581_9_2(t *testing.T) {
	cases := []struct {
		opt  iwarp.RTR
		want []byte
	}{
		{iwarp.RTRWrite, []byte{0xC1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
		{iwarp.RTRSend, []byte{0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}},
		{iwarp.RTRRead, append([]byte{0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0},
			0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0)},
	}
	for _, tc := range cases {
		t.Run(tc.opt.String(), func(t *testing.T) {
			a, b := newPipes()
			pd := newDevice(0, 0).AllocPD()
			ep, err := pd.NewEndpoint(a, EndpointConfig{SendRTR: tc.opt})
			require.NoError(t, err)
			w := newWire(b)
			require.NoError(t, ep.Start())
			select {
			case seg := <-w.segs:
				assert.Equal(t, tc.want, seg)
			case <-time.After(5 * time.Second):
				t.Fatal("no RTR")
			}
			_ = ep.Abort()
			w.finish(t, ep, a, 0)
		})
	}
}

// TestRTR_WrongFirstMessage_RFC6581_8: a Responder expecting an RTR
// answers any other first message with Terminate 2/0/0x07.
func TestRTR_WrongFirstMessage_RFC6581_8(t *testing.T) {
	cases := []struct {
		name   string
		expect iwarp.RTR
		seg    func(w *wire) []byte
	}{
		{"send-instead-of-write", iwarp.RTRWrite, func(w *wire) []byte {
			return w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpSend), 0, iwarpwire.RDMAPQNSend, nil)
		}},
		{"nonzero-write", iwarp.RTRWrite, func(*wire) []byte {
			return tagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), 1, 0, []byte{1, 2, 3, 4})
		}},
		{"write-instead-of-send", iwarp.RTRSend, func(*wire) []byte { return tagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), 1, 0, nil) }},
		{"nonzero-read", iwarp.RTRRead, func(w *wire) []byte {
			rr := readRequest{SinkSTag: 1, Size: 4, SrcSTag: 1}
			return w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadRequest), 0, iwarpwire.RDMAPQNReadRequest, rr.append(nil))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := newVictim(t, EndpointConfig{ExpectRTR: tc.expect}, func(v *victim) {
				require.NoError(t, v.ep.PostRecv(1, make([]byte, 64)))
			})
			v.w.inject(t, tc.seg(v.w))
			tm, _ := v.w.terminate(t)
			assert.Equal(t, iwarp.Term.NoMatchingRTR, tm.Code)
			var te *TerminateError
			require.ErrorAs(t, v.ep.Err(), &te)
			assert.Equal(t, iwarp.Term.NoMatchingRTR, te.Code)
			assert.Equal(t, 1, v.w.finish(t, v.ep, v.pipe, 1))
		})
	}
}

// TestRTR_ReadAnswered_RFC6581_9_1: the Responder answers a Read RTR with a
// zero-length Read Response carrying the sink STag 1 unchanged.
func TestRTR_ReadAnswered_RFC6581_9_1(t *testing.T) {
	v := newVictim(t, EndpointConfig{ExpectRTR: iwarp.RTRRead | iwarp.RTRWrite}, nil)
	rr := readRequest{SinkSTag: rtrSTag, SrcSTag: rtrSTag}
	v.w.inject(t, v.w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadRequest), 0, iwarpwire.RDMAPQNReadRequest, rr.append(nil)))
	select {
	case seg := <-v.w.segs:
		h, n, err := iwarpwire.ParseDDPTaggedHeader(seg)
		require.NoError(t, err)
		assert.Equal(t, iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadResponse), h.RsvdULP)
		assert.Equal(t, rtrSTag, h.STag)
		assert.Equal(t, len(seg), n, "zero-length")
	case <-time.After(5 * time.Second):
		t.Fatal("no Read Response")
	}
	assert.NoError(t, v.ep.Err())
	v.w.finish(t, v.ep, v.pipe, 0)
}

func TestRTR_Config(t *testing.T) {
	pd := newDevice(0, 0).AllocPD()
	for _, cfg := range []EndpointConfig{
		{SendRTR: iwarp.RTRWrite, ExpectRTR: iwarp.RTRWrite},
		{SendRTR: iwarp.RTRWrite | iwarp.RTRRead},
		{ExpectRTR: iwarp.RTRSend | iwarp.RTRWrite},
		{SendRTR: 0x10},
	} {
		a, _ := newPipes()
		_, err := pd.NewEndpoint(a, cfg)
		assert.ErrorIs(t, err, ErrInvalidWR, "%+v", cfg)
	}
	assert.Equal(t, "send|write|read", (iwarp.RTRSend | iwarp.RTRWrite | iwarp.RTRRead).String())
	assert.Equal(t, "none", iwarp.RTR(0).String())
}

const RTRAllForTest = iwarp.RTRSend | iwarp.RTRWrite | iwarp.RTRRead

// FuzzEndpointReceiveRTR feeds arbitrary DDP segments to a Responder
// awaiting an RTR (RFC 6581 §9.2; the first input octet selects which):
// nothing panics, nothing is written outside the registered buffers, and
// a receive-side failure (including a first message that is not the RTR)
// puts exactly one Terminate on the wire.
func FuzzEndpointReceiveRTR(f *testing.F) {
	ctl := iwarpwire.RDMAPControlByte
	w := &wire{}
	f.Add(append([]byte{0}, joinSegments(w.untagged(ctl(iwarp.RDMAPOpSend), 0, iwarpwire.RDMAPQNSend, nil), w.untagged(ctl(iwarp.RDMAPOpSend), 0, iwarpwire.RDMAPQNSend, []byte("x")))...))
	f.Add(append([]byte{1}, joinSegments(tagged(ctl(iwarp.RDMAPOpWrite), rtrSTag, 0, nil), tagged(ctl(iwarp.RDMAPOpWrite), fzRW, 0, []byte("hello")))...))
	w = &wire{}
	f.Add(append([]byte{2}, joinSegments(w.untagged(ctl(iwarp.RDMAPOpReadRequest), 0, iwarpwire.RDMAPQNReadRequest, readReq(rtrSTag, 0, 0, rtrSTag, 0)))...))
	w = &wire{}
	f.Add(append([]byte{3}, joinSegments(w.untagged(ctl(iwarp.RDMAPOpSend), 0, iwarpwire.RDMAPQNSend, []byte("early")))...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		expect := [...]iwarp.RTR{iwarp.RTRSend, iwarp.RTRWrite, iwarp.RTRRead, iwarp.RTRWrite | iwarp.RTRRead}[data[0]%4]
		v := &victim{dev: newDevice(0, 0)}
		var next uint32
		v.dev.rand = func() uint32 { next++; return next }
		v.pd = v.dev.AllocPD()
		a, b := newPipes()
		v.pipe = a
		var err error
		v.ep, err = v.pd.NewEndpoint(a, EndpointConfig{IRD: 2, ORD: 2, RQDepth: 8, ExpectRTR: expect})
		require.NoError(t, err)
		var backs [][]byte
		back, region := guarded(256)
		backs = append(backs, back)
		m, err := v.pd.Register(region, RemoteWrite)
		require.NoError(t, err)
		require.Equal(t, fzRW, m.STag())
		for i := range 2 {
			back, region := guarded(32)
			backs = append(backs, back)
			require.NoError(t, v.ep.PostRecv(uint64(i), region))
		}
		v.feed(t, b, splitSegments(data[1:]), backs)
	})
}
