package rdmap

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 5040 §8.1.1 item 1 / RFC 5041 §8.3.1 item 1: a stream of one PD
// cannot use an STag of another PD.
func TestSecurity_RFC5040_8_1_1_Item1_PDIsolation(t *testing.T) {
	runHostile(t, hostileCase{want: iwarp.Term.DDPSTagNotAssociated,
		segs: func(h *hostileEnv) [][]byte {
			return [][]byte{tagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), h.otherPD.STag(), 0, []byte{1})}
		}})
	h := runHostile(t, hostileCase{want: iwarp.Term.STagNotAssociated, r: true,
		segs: func(h *hostileEnv) [][]byte {
			return [][]byte{h.v.w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 8, h.otherPD.STag(), 0))}
		}})
	assert.Equal(t, make([]byte, 64), h.bufs[h.otherPD])
}

// RFC 5040 §8.1.1 item 2 / RFC 5041 §8.3.1 item 2: an STag limited to one
// stream cannot be used by another stream of the same PD.
func TestSecurity_RFC5040_8_1_1_Item2_StreamScope(t *testing.T) {
	h := runHostile(t, hostileCase{want: iwarp.Term.DDPSTagNotAssociated,
		segs: func(h *hostileEnv) [][]byte {
			return [][]byte{tagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), h.bound.STag(), 0, []byte{1})}
		}})
	assert.Equal(t, make([]byte, 64), h.bufs[h.bound])
}

// RFC 5040 §8.1.1 item 3 / RFC 5041 §8.3 rule 1: no access outside the
// registered range, checked to the octet (guard bytes around the region).
func TestSecurity_RFC5040_8_1_1_Item3_Bounds(t *testing.T) {
	backing := make([]byte, 64)
	region := backing[16:48]
	var mr *MR
	v := newVictim(t, EndpointConfig{}, func(v *victim) {
		var err error
		mr, err = v.pd.Register(region, RemoteWrite|RemoteRead)
		require.NoError(t, err)
	})
	v.w.inject(t, tagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), mr.STag(), 0, bytes.Repeat([]byte{0xaa}, 32)))
	v.w.inject(t, tagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), mr.STag(), 1, bytes.Repeat([]byte{0xbb}, 32)))
	tm, _ := v.w.terminate(t)
	assert.Equal(t, iwarp.Term.DDPBaseBounds, tm.Code)
	v.w.finish(t, v.ep, v.pipe, 1)
	assert.Equal(t, make([]byte, 16), backing[:16], "guard before")
	assert.Equal(t, make([]byte, 16), backing[48:], "guard after")
	assert.Equal(t, bytes.Repeat([]byte{0xaa}, 32), region, "in-bounds write placed, the other not at all")
}

// RFC 5040 §8.1.1 items 4 and 5, RFC 5041 §8.3 rules 1, 2 and §8.3.1
// items 4, 5: the ULP establishes and revokes the buffer/STag/TO-range
// association and the access rights; a revoked STag is refused on the wire.
func TestSecurity_RFC5040_8_1_1_Item4_Item5_EstablishRevoke(t *testing.T) {
	var mr *MR
	buf := make([]byte, 16)
	p := newPair(t, EndpointConfig{}, EndpointConfig{}, func(p *pair) {
		var err error
		mr, err = p.pdB.Register(buf, RemoteWrite)
		require.NoError(t, err)
	})
	ctx := ctx5(t)
	old := mr.STag()
	require.NoError(t, p.a.write(ctx, []byte{1}, old, 0))
	// RFC 5040 §5.5 rules 5 and 9: only a later Send tells B the Write is placed.
	require.NoError(t, p.b.PostRecv(0, make([]byte, 1)))
	require.NoError(t, p.a.send(ctx, nil))
	require.NoError(t, poll(t, p.rcqB).Err)
	// Revoke write access, grant read: new key, new rights.
	buf2 := make([]byte, 16)
	require.NoError(t, mr.Reregister(buf2, RemoteRead))
	assert.NotEqual(t, old, mr.STag())
	assert.Equal(t, old>>8, mr.STag()>>8, "same index, new key")
	sink, err := p.pdA.Register(make([]byte, 16), LocalWrite)
	require.NoError(t, err)
	buf2[3] = 7
	require.NoError(t, p.a.read(ctx, sink, 0, 16, mr.STag(), 0))
	assert.Equal(t, byte(7), sink.Bytes()[3])
	// The old STag is now invalid; the new one lacks write access.
	require.NoError(t, p.b.PostRecv(0, make([]byte, 1)))
	require.NoError(t, p.a.write(ctx, []byte{2}, mr.STag(), 0))
	waitDone(t, p.b)
	var te *TerminateError
	require.ErrorAs(t, p.b.Err(), &te)
	assert.Equal(t, iwarp.Term.DDPInvalidSTag, te.Code, "a Write lacking the right: DDP Invalid STag (RFC 5041 §7.1, RFC 5040 Figure 10)")
	assert.Equal(t, byte(0), buf2[0])
	assert.Equal(t, byte(1), buf[0])
}

// RFC 5040 §8.1.1 item 6, RFC 5041 §8.3.1 item 6: once Invalidate returns,
// the network can no longer modify the buffer, even with writes in flight.
func TestSecurity_RFC5040_8_1_1_Item6_NoModifyAfterRevoke(t *testing.T) {
	var mr *MR
	buf := make([]byte, 1<<16)
	p := newPair(t, EndpointConfig{SQDepth: 4096}, EndpointConfig{}, func(p *pair) {
		var err error
		mr, err = p.pdB.Register(buf, RemoteWrite)
		require.NoError(t, err)
	})
	stag := mr.STag()
	payload := bytes.Repeat([]byte{0x5a}, 1<<16)
	for i := range 200 {
		if err := p.a.postSend1(SendWR{ID: uint64(i), Op: WRWrite, Local: payload, RemoteSTag: stag}); err != nil {
			break
		}
	}
	time.Sleep(2 * time.Millisecond) // some writes placed, some in flight
	require.NoError(t, mr.Invalidate())
	snap := append([]byte(nil), buf...)
	waitDone(t, p.b)
	var te *TerminateError
	require.ErrorAs(t, p.b.Err(), &te)
	assert.Equal(t, iwarp.Term.DDPInvalidSTag, te.Code)
	assert.Equal(t, snap, buf, "unchanged after Invalidate returned")
}

// RFC 5040 §8.1.1 item 7: a peer cannot invalidate an STag shared by
// several streams (and, in this implementation, any STag not bound to the
// stream or not registered for remote invalidation).
func TestSecurity_RFC5040_8_1_1_Item7_NoRemoteInvalidateShared(t *testing.T) {
	h := runHostile(t, hostileCase{want: iwarp.Term.ProtectionCannotInvalidate, recvs: 1,
		segs: func(h *hostileEnv) [][]byte {
			return [][]byte{h.v.w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpSendInvalidate), h.invShared.STag(), 0, []byte("x"))}
		}})
	assert.True(t, h.invShared.isValid())
	h = runHostile(t, hostileCase{want: iwarp.Term.ProtectionCannotInvalidate, recvs: 1,
		segs: func(h *hostileEnv) [][]byte {
			return [][]byte{h.v.w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpSendInvalidate), h.bound.STag(), 0, []byte("x"))}
		}})
	assert.True(t, h.bound.isValid())
}

// RFC 5040 §8.1.1 item 8: STags are hard to predict and sparse over the
// full 32-bit range; never 0.
func TestSecurity_RFC5040_8_1_1_Item8_STagUnpredictable(t *testing.T) {
	dev := newDevice(0, 0)
	pd := dev.AllocPD()
	const n = 4000
	seen := map[uint32]bool{}
	var prev uint32
	sequential := 0
	var topBytes [256]bool
	for i := range n {
		m, err := pd.Register(make([]byte, 1), RemoteRead)
		require.NoError(t, err)
		s := m.STag()
		require.NotZero(t, s)
		require.False(t, seen[s], "duplicate STag")
		seen[s] = true
		if i > 0 && (s-prev == 1 || s-prev == 256) {
			sequential++
		}
		prev = s
		topBytes[s>>24] = true
	}
	assert.Less(t, sequential, 5, "consecutive registrations are not adjacent")
	covered := 0
	for _, b := range topBytes {
		if b {
			covered++
		}
	}
	assert.Greater(t, covered, 240, "spread over the whole range")
	// Re-registration changes the key.
	m, err := pd.Register(make([]byte, 1), RemoteRead)
	require.NoError(t, err)
	keys := map[uint32]bool{m.STag(): true}
	for range 20 {
		old := m.STag()
		require.NoError(t, m.Reregister(make([]byte, 1), RemoteRead))
		require.NotEqual(t, old, m.STag())
		keys[m.STag()] = true
	}
	assert.Greater(t, len(keys), 10)
}

// RFC 5040 §8.1.1 item 10: a CQ overflow does not affect streams that do
// not use the CQ; no completion is lost, the overflowing stream is
// terminated.
func TestSecurity_RFC5040_8_1_1_Item10_CQOverflowIsolated(t *testing.T) {
	small := NewCQ(2)
	p1 := newPair(t, EndpointConfig{SendCQ: small}, EndpointConfig{RQDepth: 64})
	p2 := newPair(t, EndpointConfig{}, EndpointConfig{})
	for i := range 10 {
		require.NoError(t, p1.b.PostRecv(uint64(i), make([]byte, 1)))
	}
	for i := range 10 {
		if err := p1.a.postSend1(SendWR{ID: uint64(i), Op: WRSend, Local: []byte{1}}); err != nil {
			require.ErrorIs(t, err, ErrClosed)
			break
		}
	}
	waitDone(t, p1.a)
	require.ErrorIs(t, small.err(), errCQOverflow)
	var te *TerminateError
	require.ErrorAs(t, p1.a.Err(), &te)
	assert.Equal(t, iwarp.Term.LocalCatastrophic, te.Code)
	assert.ErrorIs(t, te, errCQOverflow)
	// Every posted WR is in the CQ, none lost.
	ids := map[uint64]bool{}
	for {
		c, ok := small.tryPoll()
		if !ok {
			break
		}
		ids[c.WRID] = true
	}
	assert.NotEmpty(t, ids)
	// The other stream is unaffected.
	require.NoError(t, p2.b.PostRecv(0, make([]byte, 4)))
	require.NoError(t, p2.a.send(ctx5(t), []byte("ok")))
	assert.NoError(t, poll(t, p2.rcqB).Err)
}

// RFC 5040 §8.1.1 item 11: the number of inbound Read Requests is capped
// (IRD); the peer exceeding it is terminated.
func TestSecurity_RFC5040_8_1_1_Item11_ReadRequestCap(t *testing.T) {
	runHostile(t, hostileCase{want: iwarp.Term.CatastrophicStream, r: true, cfg: EndpointConfig{IRD: -1},
		segs: func(h *hostileEnv) [][]byte {
			return [][]byte{h.v.w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 8, h.ro.STag(), 0))}
		}})
}

// RFC 5041 §8.3 rule 5: an invalid access attempt is passed to the ULP,
// which terminates the stream: the local user sees the typed error.
func TestSecurity_RFC5041_8_3_InvalidAccessSurfaced(t *testing.T) {
	h := runHostile(t, hostileCase{want: iwarp.Term.DDPInvalidSTag,
		segs: func(h *hostileEnv) [][]byte {
			return [][]byte{tagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), 0x01020304, 0, []byte{1})}
		}})
	var te *TerminateError
	require.ErrorAs(t, h.v.ep.Err(), &te)
	assert.False(t, te.Remote)
	assert.Contains(t, te.Error(), "invalid STag")
}

// RFC 5041 §8.3 rule 4 / RFC 7306 §5: the TO range and the wrap check
// hold at the top of the 64-bit TO space.
func TestSecurity_RFC5041_8_3_TOWrapAtTopOfRange(t *testing.T) {
	runHostile(t, hostileCase{want: iwarp.Term.TOWrap, r: true,
		segs: func(h *hostileEnv) [][]byte {
			return [][]byte{h.v.w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 8, h.wrap.STag(), math.MaxUint64-3))}
		}})
}

// Atomics are atomic across streams of one device (RFC 7306 §5.3).
func TestAtomic_AcrossStreams_RFC7306_5_3(t *testing.T) {
	dev := newDevice(0, 0)
	pdB := dev.AllocPD()
	buf := make([]byte, 8)
	var wg sync.WaitGroup
	eps := make([]*Endpoint, 0, 4)
	var closers []func()
	for range 4 {
		a, b := newPipes()
		pdA := dev.AllocPD()
		ea, err := pdA.NewEndpoint(a, EndpointConfig{})
		require.NoError(t, err)
		eb, err := pdB.NewEndpoint(b, EndpointConfig{})
		require.NoError(t, err)
		require.NoError(t, ea.Start())
		require.NoError(t, eb.Start())
		eps = append(eps, ea)
		closers = append(closers, func() {
			ctx := context.Background()
			go func() { _ = eb.Close(ctx) }()
			_ = ea.Close(ctx)
			<-ea.Done()
			<-eb.Done()
			<-a.Done()
			<-b.Done()
		})
	}
	mr, err := pdB.Register(buf, RemoteAtomic)
	require.NoError(t, err)
	for _, e := range eps {
		wg.Go(func() {
			for range 100 {
				_, err := e.fetchAdd(ctx5(t), mr.STag(), 0, 1, 0)
				if !assert.NoError(t, err) {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, c := range closers {
		c()
	}
	assert.Equal(t, uint64(400), binary.NativeEndian.Uint64(buf))
}
