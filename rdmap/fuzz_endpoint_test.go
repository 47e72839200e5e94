package rdmap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// Deterministic STags for the fuzz target (see fuzzVictim): MRs registered
// in this order get these STags.
const (
	fzRW  uint32 = 0x00000102 // RemoteWrite, 256 octets
	fzRO  uint32 = 0x00000304 // RemoteRead, 256 octets
	fzAT  uint32 = 0x00000506 // RemoteAtomic, 64 octets
	fzINV uint32 = 0x00000708 // RemoteWrite, bound, remote-invalidate, 64 octets
	fzSNK uint32 = 0x0000090a // LocalWrite read sink, 256 octets
)

const guardLen = 32

// guarded returns a region of n octets inside a backing array with guard
// octets (0xa5) on both sides.
func guarded(n int) (backing, region []byte) {
	backing = bytes.Repeat([]byte{0xa5}, n+2*guardLen)
	region = backing[guardLen : guardLen+n : guardLen+n]
	clear(region)
	return
}

func guardsIntact(b []byte) bool {
	for _, x := range b[:guardLen] {
		if x != 0xa5 {
			return false
		}
	}
	for _, x := range b[len(b)-guardLen:] {
		if x != 0xa5 {
			return false
		}
	}
	return true
}

// splitSegments decodes the fuzz input: 2-octet big-endian length, then that
// many octets (fewer at the end), repeated.
func splitSegments(data []byte) [][]byte {
	var out [][]byte
	for len(data) >= 2 && len(out) < 64 {
		n := int(binary.BigEndian.Uint16(data))
		data = data[2:]
		n = min(n, len(data))
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

func joinSegments(segs ...[]byte) []byte {
	var out []byte
	for _, s := range segs {
		out = binary.BigEndian.AppendUint16(out, uint16(len(s)))
		out = append(out, s...)
	}
	return out
}

// FuzzEndpointReceive feeds arbitrary DDP segments to a live Endpoint with
// registered memory and posted receives. It checks that nothing panics,
// nothing is written outside the registered buffers (guard octets), and
// that every receive-side failure puts exactly one Terminate on the wire,
// and none otherwise.
func FuzzEndpointReceive(f *testing.F) {
	w := &wire{} // only for MSN bookkeeping of the seeds
	ctl := iwarpwire.RDMAPControlByte
	atom := atomicRequest{Op: atomicFetchAdd, ReqID: 1, STag: fzAT, TO: 8, Data: 5}
	imm := immediate{Data: 42}
	term := termHeader{Code: iwarp.Term.AccessRights}
	f.Add(joinSegments(tagged(ctl(iwarp.RDMAPOpWrite), fzRW, 0, []byte("hello"))))
	f.Add(joinSegments(w.untagged(ctl(iwarp.RDMAPOpSend), 0, 0, []byte("hi")), w.untagged(ctl(iwarp.RDMAPOpSendSE), 0, 0, nil)))
	w = &wire{}
	f.Add(joinSegments(w.untagged(ctl(iwarp.RDMAPOpReadRequest), 0, 1, readReq(1, 0, 100, fzRO, 10))))
	w = &wire{}
	f.Add(joinSegments(w.untagged(ctl(iwarp.RDMAPOpAtomicRequest), 0, 1, atom.Append(nil))))
	w = &wire{}
	f.Add(joinSegments(w.untagged(ctl(iwarp.RDMAPOpImmediate), 0, 0, imm.Append(nil))))
	w = &wire{}
	f.Add(joinSegments(w.untagged(ctl(iwarp.RDMAPOpSendInvalidate), fzINV, 0, []byte("x"))))
	w = &wire{}
	f.Add(joinSegments(w.untagged(ctl(iwarp.RDMAPOpTerminate), 0, 2, term.append(nil))))
	f.Add(joinSegments(tagged(ctl(iwarp.RDMAPOpWrite), fzRW, 250, make([]byte, 10))))
	f.Add(joinSegments(tagged(ctl(iwarp.RDMAPOpReadResponse), fzSNK, 0, make([]byte, 4))))
	f.Add([]byte{0, 3, 0x41, 0x43, 0})

	f.Fuzz(func(t *testing.T, data []byte) {
		var next uint32
		v := &victim{dev: newDevice(0, 0)}
		v.dev.rand = func() uint32 { next++; return next }
		v.pd = v.dev.AllocPD()
		a, b := newPipes()
		v.pipe = a
		var err error
		v.ep, err = v.pd.NewEndpoint(a, EndpointConfig{IRD: 2, ORD: 2, RQDepth: 8})
		require.NoError(t, err)
		var backs [][]byte
		reg := func(n int, acc Access, opts ...MROption) uint32 {
			back, region := guarded(n)
			backs = append(backs, back)
			m, err := v.pd.Register(region, acc, opts...)
			require.NoError(t, err)
			return m.STag()
		}
		require.Equal(t, fzRW, reg(256, RemoteWrite))
		require.Equal(t, fzRO, reg(256, RemoteRead))
		require.Equal(t, fzAT, reg(64, RemoteAtomic))
		require.Equal(t, fzINV, reg(64, RemoteWrite, MROption{Endpoint: v.ep}, MROption{RemoteInvalidate: true}))
		require.Equal(t, fzSNK, reg(256, LocalWrite))
		for i := range 4 {
			back, region := guarded(32)
			backs = append(backs, back)
			require.NoError(t, v.ep.PostRecv(uint64(i), region))
		}
		v.feed(t, b, splitSegments(data), backs)
	})
}

// feed starts v's endpoint, injects segs from the peer's end b, and checks
// what every input, hostile or not, must leave behind: no octet written
// outside a registered or posted buffer (backs hold the guarded
// allocations), and exactly one Terminate on the wire when the endpoint
// failed locally, none otherwise (RFC 5040 §5.4, §7.1 rule 4).
func (v *victim) feed(t *testing.T, b *llptest.Pipe, segs [][]byte, backs [][]byte) {
	t.Helper()
	require.NoError(t, v.ep.Start())
	v.w = newWire(b)
	for _, s := range segs {
		if v.w.pipe.Inject(s) != nil {
			break
		}
	}
	n := v.w.finish(t, v.ep, v.pipe, 0)
	for i, back := range backs {
		require.True(t, guardsIntact(back), "guard octets of buffer %d overwritten", i)
	}
	var te *TerminateError
	local := errors.As(v.ep.Err(), &te) && !te.Remote
	sent, sendErr := v.ep.terminateSent()
	switch {
	case local && sendErr == nil:
		require.True(t, sent)
		require.Equal(t, 1, n, "one Terminate for %v", v.ep.Err())
	case local:
		require.LessOrEqual(t, n, 1)
	default:
		require.Equal(t, 0, n, "no Terminate without a local error (%v)", v.ep.Err())
	}
}
