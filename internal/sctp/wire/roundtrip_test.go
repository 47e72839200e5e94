package wire

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTripChunk decodes c with the parser of its type and, if that
// succeeds (or fails on a rule of RFC 9260 while decoding all the fields),
// checks that appending the result and parsing it again gives the same
// thing. It also walks every cause and parameter list the chunk carries.
// It is shared by the round-trip tests and the fuzz targets: whatever c
// holds, nothing may panic.
func roundTripChunk(t testing.TB, c Chunk) {
	t.Helper()
	again := func(b []byte) Chunk {
		t.Helper()
		c2, n, err := ParseChunk(b)
		require.NoError(t, err)
		require.Equal(t, len(b), n)
		require.Zero(t, len(b)%4)
		return c2
	}
	switch c.Type {
	case ChunkData:
		d, err := ParseData(c)
		if err != nil && !errors.Is(err, ErrNoUserData) {
			return
		}
		b := build(t, d.Len(), d.Append)
		d2, err2 := ParseData(again(b))
		require.Equal(t, err, err2)
		require.Equal(t, d, d2)
	case ChunkInit, ChunkInitAck:
		i, err := ParseInit(c)
		if errors.Is(err, ErrMalformed) {
			return
		}
		b := build(t, i.Len(), i.Append)
		i2, err2 := ParseInit(again(b))
		require.Equal(t, err, err2)
		require.Equal(t, normalInit(i), normalInit(i2))
		// The answer to it, echoing its unrecognized parameters, parses.
		ack := Init{Ack: true, InitiateTag: 1, ARwnd: 1500, OutboundStreams: 1, InboundStreams: 1,
			Params: InitParams{StateCookie: []byte{}, EchoUnrecognized: i.Params.Raw}}
		if ack.Len() <= MaxChunkLen {
			a, err := ParseInit(again(build(t, ack.Len(), ack.Append)))
			require.NoError(t, err)
			if !i.Params.Report {
				require.Zero(t, a.Params.PeerUnrecognized)
			}
		}
		cause := AppendCauseUnrecognizedParams(nil, i.Params.Raw)
		if len(cause) > 0 {
			cs, _, err := ParseCause(cause)
			require.NoError(t, err)
			walkParams(t, cs.Params(), true)
		}
	case ChunkSACK:
		s, err := ParseSACK(c, nil, nil)
		if err != nil {
			return
		}
		b := build(t, s.Len(), s.Append)
		s2, err := ParseSACK(again(b), nil, nil)
		require.NoError(t, err)
		require.Equal(t, s, s2)
	case ChunkHeartbeat, ChunkHeartbeatAck:
		h, err := ParseHeartbeat(c)
		if err != nil {
			return
		}
		h2, err := ParseHeartbeat(again(build(t, h.Len(), h.Append)))
		require.NoError(t, err)
		require.Equal(t, h, h2)
	case ChunkAbort:
		a, err := ParseAbort(c)
		require.NoError(t, err)
		walkCauses(t, a.CauseIter())
		a2, err := ParseAbort(again(build(t, a.Len(), a.Append)))
		require.NoError(t, err)
		require.Equal(t, a, a2)
	case ChunkError:
		e, err := ParseError(c)
		require.NoError(t, err)
		walkCauses(t, e.CauseIter())
		e2, err := ParseError(again(build(t, e.Len(), e.Append)))
		require.NoError(t, err)
		require.Equal(t, e, e2)
	case ChunkShutdown:
		s, err := ParseShutdown(c)
		if err != nil {
			return
		}
		s2, err := ParseShutdown(again(build(t, s.Len(), s.Append)))
		require.NoError(t, err)
		require.Equal(t, s, s2)
	case ChunkShutdownAck:
		s, err := ParseShutdownAck(c)
		require.NoError(t, err)
		_, err = ParseShutdownAck(again(build(t, s.Len(), s.Append)))
		require.NoError(t, err)
	case ChunkCookieEcho:
		e, err := ParseCookieEcho(c)
		require.NoError(t, err)
		e2, err := ParseCookieEcho(again(build(t, e.Len(), e.Append)))
		require.NoError(t, err)
		require.Equal(t, e, e2)
	case ChunkCookieAck:
		a, err := ParseCookieAck(c)
		require.NoError(t, err)
		_, err = ParseCookieAck(again(build(t, a.Len(), a.Append)))
		require.NoError(t, err)
	case ChunkShutdownComplete:
		s, err := ParseShutdownComplete(c)
		require.NoError(t, err)
		s2, err := ParseShutdownComplete(again(build(t, s.Len(), s.Append)))
		require.NoError(t, err)
		require.Equal(t, s, s2)
	case ChunkForwardTSN:
		f, err := ParseForwardTSN(c, nil)
		if err != nil {
			return
		}
		f2, err := ParseForwardTSN(again(build(t, f.Len(), f.Append)), nil)
		require.NoError(t, err)
		require.Equal(t, f, f2)
	default:
		// Not parsed: reported as received, if its type asks for it.
		if c.Type.Action().Report() {
			cause := AppendCauseUnrecognizedChunk(nil, c)
			if len(cause) > 0 {
				cs, _, err := ParseCause(cause)
				require.NoError(t, err)
				c2, err := cs.UnrecognizedChunk()
				require.NoError(t, err)
				require.Equal(t, c, c2)
			}
		}
		c2 := again(build(t, padded(c.Len()), c.Append))
		require.Equal(t, c, c2)
	}
}

// normalInit clears what Append does not write back.
func normalInit(i Init) Init {
	p := &i.Params
	p.NumAddrs = min(p.NumAddrs, MaxInitAddrs)
	p.Raw, p.EchoUnrecognized = nil, nil
	p.Unrecognized, p.PeerUnrecognized, p.Report, p.Stopped = 0, 0, false, false
	return i
}

// walkCauses reads every cause with every accessor.
func walkCauses(t testing.TB, it CauseIter) {
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		_, _ = c.InvalidStream()
		_, _ = c.Staleness()
		_, _ = c.NoUserDataTSN()
		_, _ = c.MissingParams(nil)
		if ch, err := c.UnrecognizedChunk(); err == nil {
			roundTripChunk(t, ch)
		}
		walkParams(t, c.Params(), false)
		_ = c.Code.String()
	}
	_ = it.Err()
}

func walkParams(t testing.TB, it ParamIter, wantClean bool) {
	for p, ok := it.Next(); ok; p, ok = it.Next() {
		_ = p.Type.String()
		_ = p.Type.Action()
	}
	if wantClean {
		require.NoError(t, it.Err())
	}
}

// One packet with every chunk type this package writes, bundled, read back
// chunk by chunk (RFC 9260 §6.10 bundling; in a real association INIT,
// INIT ACK and SHUTDOWN COMPLETE travel alone).
func TestRoundTripBundle_RFC9260_3(t *testing.T) {
	data := Data{Unordered: true, Beginning: true, Ending: true, TSN: 7, StreamID: 2, PPID: 16, UserData: []byte("DDP segment")}
	initc := Init{InitiateTag: 9, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 7,
		Params: InitParams{NumAddrs: 1, Addrs: [MaxInitAddrs]netip.Addr{netip.MustParseAddr("10.1.2.3")},
			ForwardTSN: true, HasAdaptation: true, Adaptation: AdaptationDDP}}
	initAck := Init{Ack: true, InitiateTag: 10, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 1,
		Params: InitParams{StateCookie: []byte("cookie!"), CookiePreservative: 3, HasAdaptation: true, Adaptation: AdaptationDDP}}
	sack := SACK{CumTSNAck: 6, ARwnd: 4096, Gaps: []GapAckBlock{{2, 2}}, Dups: []uint32{5, 5}}
	hb := Heartbeat{Info: []byte{1, 2, 3}}
	hbAck := Heartbeat{Ack: true, Info: []byte{1, 2, 3}}
	abort := Abort{T: true, Causes: AppendCauseNoUserData(nil, 3)}
	shutdown := Shutdown{CumTSNAck: 6}
	errc := ErrorChunk{Causes: AppendCauseStaleCookie(AppendCauseInvalidStream(nil, 4), 1000)}
	echo := CookieEcho{Cookie: []byte("cookie!")}
	fwd := ForwardTSN{NewCumTSN: 8, Streams: []ForwardTSNStream{{1, 2}}}

	b := AppendHeader(nil, Header{SrcPort: 5000, DstPort: 5000, VerificationTag: 0xabcdef01})
	b = data.Append(b)
	b = initc.Append(b)
	b = initAck.Append(b)
	b = sack.Append(b)
	b = hb.Append(b)
	b = hbAck.Append(b)
	b = abort.Append(b)
	b = shutdown.Append(b)
	b = ShutdownAck{}.Append(b)
	b = errc.Append(b)
	b = echo.Append(b)
	b = CookieAck{}.Append(b)
	b = ShutdownComplete{T: true}.Append(b)
	b = fwd.Append(b)
	SetChecksum(b)

	p, err := ParsePacket(b)
	require.NoError(t, err)
	assert.Equal(t, uint32(0xabcdef01), p.Header.VerificationTag)
	it := p.Chunks()
	next := func() Chunk {
		t.Helper()
		c, ok := it.Next()
		require.True(t, ok)
		roundTripChunk(t, c)
		return c
	}
	d, err := ParseData(next())
	require.NoError(t, err)
	assert.Equal(t, data, d)
	i, err := ParseInit(next())
	require.NoError(t, err)
	assert.Equal(t, initc, normalInit(i))
	i, err = ParseInit(next())
	require.NoError(t, err)
	assert.Equal(t, initAck, normalInit(i))
	s, err := ParseSACK(next(), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, sack, s)
	h, err := ParseHeartbeat(next())
	require.NoError(t, err)
	assert.Equal(t, hb, h)
	h, err = ParseHeartbeat(next())
	require.NoError(t, err)
	assert.Equal(t, hbAck, h)
	a, err := ParseAbort(next())
	require.NoError(t, err)
	assert.Equal(t, abort, a)
	sd, err := ParseShutdown(next())
	require.NoError(t, err)
	assert.Equal(t, shutdown, sd)
	_, err = ParseShutdownAck(next())
	require.NoError(t, err)
	e, err := ParseError(next())
	require.NoError(t, err)
	assert.Equal(t, errc, e)
	ce, err := ParseCookieEcho(next())
	require.NoError(t, err)
	assert.Equal(t, echo, ce)
	_, err = ParseCookieAck(next())
	require.NoError(t, err)
	sc, err := ParseShutdownComplete(next())
	require.NoError(t, err)
	assert.True(t, sc.T)
	f, err := ParseForwardTSN(next(), nil)
	require.NoError(t, err)
	assert.Equal(t, fwd, f)
	_, ok := it.Next()
	assert.False(t, ok)
	require.NoError(t, it.Err())
}
