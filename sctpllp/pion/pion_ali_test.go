package pion

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"

	"github.com/pion/transport/v5/dpipe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// pionPipePair sets up a pion association over an in-memory packet pipe,
// recording what each side writes, and returns both sides' results.
func pionPipePair(t *testing.T, client, server Config) (ct, st *transport, cerr, serr error, rc, rs *recordConn) {
	t.Helper()
	ca, cb := dpipe.Pipe()
	rc, rs = &recordConn{Conn: ca}, &recordConn{Conn: cb}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type res struct {
		t   *transport
		err error
	}
	ch := make(chan res, 1)
	go func() {
		tr, err := newTransport(ctx, rs, false, server)
		ch <- res{tr, err}
	}()
	ct, cerr = newTransport(ctx, rc, true, client)
	r := <-ch
	st, serr = r.t, r.err
	t.Cleanup(func() {
		for _, tr := range []*transport{ct, st} {
			if tr != nil {
				_ = tr.Abort()
			}
		}
		_ = ca.Close()
		_ = cb.Close()
	})
	return ct, st, cerr, serr, rc, rs
}

// initALI returns the Adaptation Layer Indication of the INIT or INIT ACK
// among pkts (chunk type typ), and whether one was found.
func initALI(t *testing.T, pkts [][]byte, typ byte) (uint32, bool) {
	t.Helper()
	for _, p := range pkts {
		if len(p) > wire.HeaderLen && p[wire.HeaderLen] == typ {
			ind, found, valid := findALI(p)
			require.True(t, valid, "chunk type %d parses", typ)
			return ind, found
		}
	}
	t.Fatalf("no chunk of type %d written", typ)
	return 0, false
}

// TestPion_AdaptationLayerIndication_RFC5043_5_1: a DDP endpoint sends the
// Adaptation Layer Indication with the DDP code point in its INIT or INIT
// ACK and checks the peer's (RFC 5043 §5.1, §11.1; the parameter is RFC
// 5061 §4.2.6). The pion backend does both by default: the INIT and INIT
// ACK on the wire carry 0x00000001, PeerAdaptation reports the peer's, and
// a peer without it is refused with ErrAdaptationMismatch on whichever side
// checks it (the association is aborted, so the other side ends too),
// unless AllowMissingAdaptation is set.
func TestPion_AdaptationLayerIndication_RFC5043_5_1(t *testing.T) {
	none := uint32(0)
	t.Run("sent and checked by default", func(t *testing.T) {
		ct, st, cerr, serr, rc, rs := pionPipePair(t, Config{}, Config{})
		require.NoError(t, cerr)
		require.NoError(t, serr)
		ind, found := initALI(t, rc.packets(), byte(wire.ChunkInit))
		assert.True(t, found, "the INIT carries the indication")
		assert.Equal(t, backend.AdaptationIndicationDDP, ind)
		ind, found = initALI(t, rs.packets(), byte(wire.ChunkInitAck))
		assert.True(t, found, "the INIT ACK carries the indication")
		assert.Equal(t, backend.AdaptationIndicationDDP, ind)
		for _, tr := range []*transport{ct, st} {
			ind, ok := tr.PeerAdaptation()
			assert.True(t, ok)
			assert.Equal(t, backend.AdaptationIndicationDDP, ind)
		}
	})
	t.Run("INIT ACK without it refused by the dialer", func(t *testing.T) {
		_, st, cerr, serr, _, _ := pionPipePair(t, Config{}, Config{adaptation: &none})
		require.ErrorIs(t, cerr, backend.ErrAdaptationMismatch)
		assert.Contains(t, cerr.Error(), "peer sent none")
		if serr == nil { // the ABORT may come before or after set-up ended
			done := make(chan error, 1)
			st.Start(func(uint16, uint32, []byte) {}, func(err error) { done <- err })
			select {
			case err := <-done:
				assert.ErrorIs(t, err, llp.ErrAborted, "the dialer's ABORT ends the listener's side")
			case <-time.After(5 * time.Second):
				t.Fatal("listener side not ended by the ABORT")
			}
		}
	})
	t.Run("INIT without it refused by the listener", func(t *testing.T) {
		ct, _, cerr, serr, _, _ := pionPipePair(t, Config{adaptation: &none}, Config{})
		require.ErrorIs(t, serr, backend.ErrAdaptationMismatch)
		if cerr == nil {
			done := make(chan error, 1)
			ct.Start(func(uint16, uint32, []byte) {}, func(err error) { done <- err })
			select {
			case err := <-done:
				assert.ErrorIs(t, err, llp.ErrAborted, "the listener's ABORT ends the dialer's side")
			case <-time.After(5 * time.Second):
				t.Fatal("dialer side not ended by the ABORT")
			}
		}
	})
	t.Run("AllowMissingAdaptation", func(t *testing.T) {
		ct, _, cerr, serr, _, _ := pionPipePair(t, Config{AllowMissingAdaptation: true}, Config{adaptation: &none})
		require.NoError(t, cerr)
		require.NoError(t, serr)
		_, ok := ct.PeerAdaptation()
		assert.False(t, ok)
	})
}

// appendALI keeps the INIT valid: parameters padded, the chunk length
// without the last parameter's padding, the CRC32c right (RFC 9260 §3.2,
// §3.2.1, Appendix A).
func TestAppendALI_RFC9260_3_2(t *testing.T) {
	// INIT with one 5-octet parameter (padded to 8) as the last one.
	pkt := make([]byte, wire.HeaderLen)
	pkt = append(pkt, byte(wire.ChunkInit), 0, 0, 0)
	pkt = append(pkt, make([]byte, sctpInitFixedLen)...)
	pkt = append(pkt, 0x80, 0x99, 0, 5, 0xAB, 0, 0, 0)
	binary.BigEndian.PutUint16(pkt[wire.HeaderLen+2:], uint16(wire.ChunkHeaderLen+sctpInitFixedLen+5))
	out, ok := appendALI(pkt, backend.AdaptationIndicationDDP)
	require.True(t, ok)
	assert.Len(t, out, len(pkt)+aliParamLen)
	assert.Equal(t, uint16(wire.ChunkHeaderLen+sctpInitFixedLen+8+aliParamLen), binary.BigEndian.Uint16(out[wire.HeaderLen+2:]))
	ind, found, valid := findALI(out)
	assert.True(t, valid)
	assert.True(t, found)
	assert.Equal(t, backend.AdaptationIndicationDDP, ind)
	assert.Equal(t, []byte{0x80, 0x99, 0, 5, 0xAB, 0, 0, 0}, out[wire.HeaderLen+20:wire.HeaderLen+28], "earlier parameter kept, padded")
	_, ok = appendALI(out, backend.AdaptationIndicationDDP)
	assert.False(t, ok, "never twice")
	// Not an INIT, or a broken one: unchanged.
	data := append(make([]byte, wire.HeaderLen), 0, 3, 0, 20)
	_, ok = appendALI(append(data, make([]byte, 16)...), 1)
	assert.False(t, ok)
	bad := append([]byte(nil), pkt...)
	binary.BigEndian.PutUint16(bad[wire.HeaderLen+2:], 0xFFF0)
	_, ok = appendALI(bad, 1)
	assert.False(t, ok)
}
