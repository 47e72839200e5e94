package rdmap

import (
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEndpoint_IRDCountsRequestUntilResponseSent_RFC5040_6_1: an inbound
// RDMA Read Request is outstanding until its RDMA Read Response has been
// sent; the number of outstanding inbound Read Requests is limited per
// RDMAP Stream direction and the RDMAP layer enforces the limit the ULP set
// (RFC 5040 §6.1; the cap of §8.1.1 item 11). A second request that arrives
// while the response to the first is still being sent is one more than
// IRD=1: it is refused with the Terminate this endpoint uses for an IRD
// overflow (RDMAP layer, Remote Operation, catastrophic error localized to
// the RDMAP Stream, as Linux siw sends; RFC 5040 §4.8 Figure 9), and the
// local user sees that error. With IRD=2 the same two requests are
// answered.
func TestEndpoint_IRDCountsRequestUntilResponseSent_RFC5040_6_1(t *testing.T) {
	for _, tc := range []struct {
		ird    int
		refuse bool
	}{
		{1, true},
		{2, false},
	} {
		t.Run(map[bool]string{true: "IRD 1 refuses", false: "IRD 2 answers"}[tc.refuse], func(t *testing.T) {
			h := newHostile(t, EndpointConfig{IRD: tc.ird}, 0)
			v := h.v
			v.pipe.SetMULPDU(128) // a 4 KiB response is ~36 segments
			req := readReq(1, 0, 4096, h.ro.STag(), 0)
			release := holdReadResponse(t, v, req)
			v.w.inject(t, v.w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadRequest), 0, 1, req))
			if tc.refuse {
				require.Eventually(t, func() bool { return v.ep.Err() != nil }, 5*time.Second, time.Millisecond,
					"a second Read Request during the first's response exceeds IRD=1")
				release()
				tm, _ := v.w.terminate(t)
				assert.Equal(t, iwarp.Term.CatastrophicStream, tm.Code)
				assert.True(t, tm.R, "the Terminate carries the offending Read Request header")
				var te *TerminateError
				require.ErrorAs(t, v.ep.Err(), &te)
				assert.Equal(t, iwarp.Term.CatastrophicStream, te.Code)
				assert.False(t, te.Remote)
				assert.Contains(t, v.ep.Err().Error(), "IRD=1")
				v.w.finish(t, v.ep, v.pipe, 1)
				return
			}
			// The second request waits its turn: no error while the first
			// response is held.
			time.Sleep(50 * time.Millisecond)
			assert.NoError(t, v.ep.Err())
			release()
			last := 0
			deadline := time.After(10 * time.Second)
			for last < 2 {
				select {
				case seg := <-v.w.segs:
					_, isTerm := asTerminate(seg)
					require.False(t, isTerm, "no Terminate with IRD=2: %v", v.ep.Err())
					if seg[0]&0xC0 == 0xC0 && opcode(seg[1]&0x0f) == iwarp.RDMAPOpReadResponse {
						last++ // tagged, L set: a Read Response complete
					}
				case <-deadline:
					t.Fatalf("%d of 2 Read Responses sent", last)
				}
			}
			assert.NoError(t, v.ep.Err())
			v.w.finish(t, v.ep, v.pipe, 0)
		})
	}
}

// TestRDMAWriteWithoutRemoteWrite_RFC5041_7_1: an RDMA Write to an STag
// registered without remote write access. RFC 5040 §7.2 leaves incoming
// RDMA Writes to the DDP layer ("The DDP Layer MUST validate all DDP
// Segment fields"), and Figure 10 of RFC 5040 §4.8 allows the RDMA layer's
// Remote Protection Error only for an RDMA Read Request and the Sends with
// Invalidate. DDP's tagged check 1 (RFC 5041 §7.1: the STag must be valid
// for the stream) fails, and RFC 5041 §7.2 names it: layer DDP, Tagged
// Buffer Error, Invalid STag (Linux siw reports the same). The Terminate
// carries the DDP header and segment length, and no RDMA header.
func TestRDMAWriteWithoutRemoteWrite_RFC5041_7_1(t *testing.T) {
	h := runHostile(t, hostileCase{
		name: "Write to a read-only STag",
		want: iwarp.Term.DDPInvalidSTag,
		segs: func(h *hostileEnv) [][]byte {
			return [][]byte{tagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), h.ro.STag(), 0, []byte{1, 2, 3})}
		},
	})
	assert.Equal(t, make([]byte, 4096), h.bufs[h.ro], "nothing placed")
	assert.Equal(t, iwarp.LayerDDP, iwarp.Term.DDPInvalidSTag.Layer)
}

// holdReadResponse injects the Read Request req into the victim and
// returns once the victim's responder is stalled in the first segment of
// its Read Response: the response is being sent until release is called.
func holdReadResponse(t *testing.T, v *victim, req []byte) (release func()) {
	t.Helper()
	inResponse := make(chan struct{})
	held := make(chan struct{})
	first := true
	v.pipe.SetTap(func(seg []byte) {
		if first && seg[0]&0x80 != 0 && opcode(seg[1]&0x0f) == iwarp.RDMAPOpReadResponse {
			first = false
			close(inResponse)
			<-held
		}
	})
	v.w.inject(t, v.w.untagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadRequest), 0, 1, req))
	select {
	case <-inResponse:
	case <-time.After(5 * time.Second):
		t.Fatal("no Read Response started")
	}
	return func() { close(held) }
}
