package workload

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func loopback(t *testing.T, cfg sctpllp.Config) (client, server *sctpllp.Association) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if cfg.Stack == nil {
		cfg.Stack = pion.Stack(pion.Config{})
	}
	client, server, err := Loopback(ctx, "127.0.0.1:0", cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Abort(); _ = server.Abort() })
	return client, server
}

func runLoopback(t *testing.T, cfg Config, acfg sctpllp.Config) (*Result, *sctpllp.Association, *sctpllp.Association) {
	t.Helper()
	client, server := loopback(t, acfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, client, server, cfg)
	require.NoError(t, err)
	return res, client, server
}

// TestRun_EveryOperation_RFC5040_5_RFC7306 runs the script twice on six
// streams: every operation of RFC 5040 §5 and RFC 7306 §5, §6 succeeds and
// verifies at both ends, every operation posted completes, and the
// association shuts down by itself once every stream is closed
// (RFC 5040 §7).
func TestRun_EveryOperation_RFC5040_5_RFC7306(t *testing.T) {
	res, client, server := runLoopback(t, Config{Streams: 6, MaxSize: 20000, Rounds: 2, Seed: 42, Name: "test"}, sctpllp.Config{})
	require.NoError(t, res.Err())
	require.Len(t, res.Streams, 6)
	for i, s := range res.Streams {
		assert.Equal(t, uint16(i+1), s.ID)
		assert.False(t, s.Erroneous || s.ServerErroneous, "stream %d", s.ID)
		assert.ErrorIs(t, s.ServerEnd, rdmap.ErrPeerClosed, "stream %d", s.ID)
		assert.Equal(t, res.Streams[0].Ops, s.Ops, "every stream runs the same script")
	}
	for _, name := range OpNames {
		assert.NotZero(t, res.Ops[name], name)
	}
	// Two rounds: three FetchAdds and one CmpSwap each.
	assert.Equal(t, uint64(6*2*3), res.Ops["fetch-add"])
	assert.Equal(t, uint64(6*2), res.Ops["cmp-swap"])
	assert.Equal(t, res.Posted, res.Completed)
	assert.Equal(t, res.Completed, res.Succeeded)
	assert.Zero(t, res.Flushed)
	assert.Equal(t, uint64(6), res.Opened)
	assert.Equal(t, uint64(6), res.ClientStats.Opened)
	assert.Zero(t, res.ClientStats.Erroneous+res.ServerStats.Erroneous)
	assert.Equal(t, uint64(42), res.Seed)
	require.NoError(t, AwaitEnd(client, 10*time.Second))
	require.NoError(t, AwaitEnd(server, 10*time.Second))
}

// TestRun_BreakOneStream_RFC5041_7_2 breaks stream 3 with a tagged segment
// for an STag never advertised: the server's Terminate says DDP layer,
// tagged buffer error, invalid STag (RFC 5041 §7.2), carries the injected
// header (RFC 5040 §4.8), the stream is erroneous at both ends (RFC 5040
// §7) and every other stream completes.
func TestRun_BreakOneStream_RFC5041_7_2(t *testing.T) {
	res, client, server := runLoopback(t, Config{Streams: 5, MaxSize: 4096, Break: 3}, sctpllp.Config{})
	require.NoError(t, res.Err())
	for _, s := range res.Streams {
		if s.ID != 3 {
			assert.False(t, s.Broken || s.Erroneous || s.ServerErroneous, "stream %d", s.ID)
			continue
		}
		assert.True(t, s.Broken)
		require.NotNil(t, s.Terminate)
		assert.True(t, s.Terminate.Remote)
		assert.Equal(t, iwarp.Term.DDPInvalidSTag, s.Terminate.Code)
		assert.Equal(t, s.Injected, s.Terminate.DDPHeader)
		assert.Len(t, s.Injected, iwarpwire.DDPTaggedHeaderLen)
		assert.True(t, s.Erroneous)
		assert.True(t, s.ServerErroneous)
		var te *rdmap.TerminateError
		require.ErrorAs(t, s.ServerEnd, &te)
		assert.False(t, te.Remote, "the server sent the Terminate")
		assert.Zero(t, s.Ops)
	}
	assert.Equal(t, uint64(1), res.ClientStats.Erroneous)
	assert.Equal(t, uint64(1), res.ServerStats.Erroneous)
	assert.Equal(t, uint64(1), res.Killed)
	require.NoError(t, AwaitEnd(client, 10*time.Second))
	require.NoError(t, AwaitEnd(server, 10*time.Second))
}

// TestRun_RandomForDuration_KillsAccounted runs random operations for a
// while with random kills (local Abort, RFC 5040 §6.2.1, and hostile
// segments, RFC 5041 §7.2): killed streams are replaced and every
// operation posted completed, as succeeded or flushed.
func TestRun_RandomForDuration_KillsAccounted(t *testing.T) {
	var progress []Totals
	res, client, server := runLoopback(t, Config{
		Streams: 8, MaxSize: 32 << 10, Duration: 3 * time.Second, Random: true, KillEvery: 150 * time.Millisecond,
		Window: 4, Seed: 7, ProgressEvery: time.Second, Progress: func(t Totals) { progress = append(progress, t) },
	}, sctpllp.Config{KeepIdle: true})
	require.NoError(t, res.Err())
	assert.NotZero(t, res.Killed)
	assert.Greater(t, res.Opened, uint64(8), "killed streams were replaced")
	assert.Equal(t, res.Posted, res.Completed)
	assert.Equal(t, res.Completed, res.Succeeded+res.Flushed)
	assert.NotZero(t, res.Succeeded)
	assert.NotEmpty(t, progress)
	killed := 0
	for _, s := range res.Streams {
		if s.Killed != "" {
			killed++
			assert.Equal(t, s.ID%2 == 0, s.Killed == "abort", "stream %d killed by %s", s.ID, s.Killed)
		}
	}
	assert.NotZero(t, killed)
	assert.Len(t, res.Streams, int(res.Opened))
	// KeepIdle: the association outlives its streams until closed.
	select {
	case <-client.Done():
		t.Fatal("a KeepIdle association ended with its streams")
	default:
	}
	require.NoError(t, client.Close())
	require.NoError(t, AwaitEnd(server, 10*time.Second))
}

// TestRun_ConfiguredSizes runs fixed sizes per stream, including 0 and 1.
func TestRun_ConfiguredSizes(t *testing.T) {
	sizes := map[uint16]int{1: 0, 2: 1, 3: 1500}
	res, _, _ := runLoopback(t, Config{Streams: 3, Sizes: func(id uint16) (int, int) { return sizes[id], sizes[id] }}, sctpllp.Config{})
	require.NoError(t, res.Err())
	for _, s := range res.Streams {
		assert.Equal(t, sizes[s.ID], s.Size)
	}
	assert.Less(t, res.Streams[0].Octets, res.Streams[2].Octets)
}

func TestRun_ConfigErrors(t *testing.T) {
	client, server := loopback(t, sctpllp.Config{})
	_, err := Run(context.Background(), client, server, Config{Streams: client.NumStreams()})
	assert.ErrorContains(t, err, "stream IDs")
	_, err = Run(context.Background(), client, server, Config{Streams: 2, Break: 3})
	assert.ErrorContains(t, err, "Break 3")
}

// newCheckServer is a server side with its memory, without a stream, for
// the checks of single messages.
func newCheckServer(t *testing.T, hi int) *serverStream {
	t.Helper()
	pd := new(rdmap.Device).AllocPD()
	s := &serverStream{r: &run{cfg: Config{Window: 2}, spd: pd}, p: &plan{hi: hi}, sid: 9}
	s.bufs = [][]byte{make([]byte, hi), make([]byte, hi)}
	s.immOff, s.counterOff = uint64(hi+7)&^7, 2*uint64(hi+7)&^7
	var err error
	s.target, err = pd.Register(make([]byte, s.counterOff+8), rdmap.LocalWrite|rdmap.RemoteWrite)
	require.NoError(t, err)
	s.inv, err = pd.Register(make([]byte, 64), rdmap.RemoteRead, rdmap.MROption{RemoteInvalidate: true})
	require.NoError(t, err)
	return s
}

// TestServerCheck_EveryOctet_RFC5040_5_3 feeds the server's check a Send
// as it should arrive, then with one octet changed, a lost or spurious
// Solicited Event, a truncation and a message out of sequence: each must
// be caught.
func TestServerCheck_EveryOctet_RFC5040_5_3(t *testing.T) {
	s := newCheckServer(t, 1000)
	put := func(n int, kind byte) rdmap.Completion {
		fill(s.bufs[0][:n], seed(s.sid, s.received, n, kind))
		return rdmap.Completion{WRID: 0, Length: n, Solicited: kind == kindSendSE}
	}
	_, err := s.check(put(1000, kindSend))
	require.NoError(t, err)
	_, err = s.check(put(777, kindSendSE))
	require.NoError(t, err)

	c := put(1000, kindSend)
	s.bufs[0][999] ^= 1
	_, err = s.check(c)
	assert.ErrorContains(t, err, "from octet 999")

	c = put(500, kindSend)
	c.Solicited = true
	_, err = s.check(c)
	assert.Error(t, err, "a spurious Solicited Event")
	c = put(500, kindSendSE)
	c.Solicited = false
	_, err = s.check(c)
	assert.Error(t, err, "a lost Solicited Event")

	c = put(500, kindSend)
	c.Length = 499
	_, err = s.check(c)
	assert.Error(t, err, "a truncated Send")

	fill(s.bufs[0][:64], seed(s.sid, s.received+1, 64, kindSend))
	_, err = s.check(rdmap.Completion{WRID: 0, Length: 64})
	assert.Error(t, err, "the next message's payload")

	_, err = s.check(rdmap.Completion{WRID: 5})
	assert.ErrorContains(t, err, "unknown receive")
}

// TestServerCheck_SendWithInvalidate_RFC5040_5_3: the Send with Invalidate
// must name the advertised STag; the server then re-registers it under a
// new key (RFC 5040 §8.1.1 item 4).
func TestServerCheck_SendWithInvalidate_RFC5040_5_3(t *testing.T) {
	s := newCheckServer(t, 100)
	old := s.inv.STag()
	fill(s.bufs[1][:100], seed(s.sid, 0, 100, kindSendInv))
	require.NoError(t, s.inv.Invalidate())
	_, err := s.check(rdmap.Completion{WRID: 1, Length: 100, InvalidatedSTag: old ^ 0x100})
	assert.ErrorContains(t, err, "send with invalidate of")

	_, err = s.check(rdmap.Completion{WRID: 1, Length: 100, InvalidatedSTag: old})
	require.NoError(t, err)
	assert.NotEqual(t, old, s.inv.STag())
}

// TestServerCheck_Immediate_RFC7306_6: Immediate Data values carry the
// message number, the SE flag and a check value; the data of a Write with
// Immediate is compared at the target when its Immediate Data arrives.
func TestServerCheck_Immediate_RFC7306_6(t *testing.T) {
	s := newCheckServer(t, 300)
	imm := func(kind byte, se bool, value uint32) rdmap.Completion {
		return rdmap.Completion{HasImm: true, Solicited: se, Imm: immValue(kind, se, s.received, value)}
	}
	sync, err := s.check(imm(kindImm, true, immCheck(s.sid, 0)))
	require.NoError(t, err)
	assert.False(t, sync)
	sync, err = s.check(imm(kindSync, false, immCheck(s.sid, 0)))
	require.NoError(t, err)
	assert.True(t, sync)
	_, err = s.check(imm(kindImm, false, immCheck(s.sid, 0)+1))
	assert.ErrorContains(t, err, "check value")
	c := imm(kindImm, false, immCheck(s.sid, 0))
	c.Solicited = true
	_, err = s.check(c)
	assert.ErrorContains(t, err, "solicited")
	c = imm(kindImm, false, immCheck(s.sid, 1))
	c.Imm = immValue(kindImm, false, 1, immCheck(s.sid, 1))
	_, err = s.check(c)
	assert.ErrorContains(t, err, "is message 1")
	_, err = s.check(imm('?', false, 0))
	assert.ErrorContains(t, err, "unknown kind")

	area := s.target.Bytes()[s.immOff:]
	fill(area[:300], seed(s.sid, 0, 300, kindWriteImm))
	_, err = s.check(imm(kindWriteImm, true, 300))
	require.NoError(t, err)
	area[17] ^= 0x80
	_, err = s.check(imm(kindWriteImm, true, 300))
	assert.ErrorContains(t, err, "from octet 17")
	_, err = s.check(imm(kindWriteImm, true, 301))
	assert.ErrorContains(t, err, "largest 300")
}

func TestWire_RoundTrips(t *testing.T) {
	a := advert{target: Region{STag: 0x01020304, TO: 4096, Length: 2008}, invSTag: 0x0A0B0C0D, max: 1000, window: 8, immOff: 1000, counterOff: 2000}
	got, err := parseAdvert(a.bytes())
	require.NoError(t, err)
	assert.Equal(t, a, got)
	_, err = parseAdvert(a.bytes()[:advertLen-1])
	assert.Error(t, err)
	bad := a
	bad.counterOff = 1999
	_, err = parseAdvert(bad.bytes())
	assert.ErrorContains(t, err, "overlaps")
	bad = a
	bad.window = 1
	_, err = parseAdvert(bad.bytes())
	assert.ErrorContains(t, err, "window")
	bad = a
	bad.target.Length = 2007
	_, err = parseAdvert(bad.bytes())
	assert.ErrorContains(t, err, "beyond")

	p := pong{invSTag: 5, received: 6, counter: 1 << 60}
	gp, err := parsePong(p.bytes())
	require.NoError(t, err)
	assert.Equal(t, p, gp)
	_, err = parsePong(nil)
	assert.Error(t, err)

	for _, se := range []bool{false, true} {
		v := immValue(kindWriteImm, se, 1<<23+5, 0xFFFFFFFF)
		k, gse, msg, val := splitImm(v)
		assert.Equal(t, byte(kindWriteImm), k)
		assert.Equal(t, se, gse)
		assert.Equal(t, uint32(5), msg)
		assert.Equal(t, uint32(0xFFFFFFFF), val)
	}
	assert.Equal(t, byte(kindSendSEInv), sendKind(true, true))
	assert.Equal(t, byte(kindSendInv), sendKind(false, true))
}

func TestPattern_FillAndMismatch(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 4096, 4099} {
		b := fill(make([]byte, n), seed(1, 2, n, kindSend))
		assert.Equal(t, -1, mismatch(b, seed(1, 2, n, kindSend)), n)
		if n == 0 {
			continue
		}
		b[n-1] ^= 1
		assert.Equal(t, n-1, mismatch(b, seed(1, 2, n, kindSend)), n)
		assert.NotEqual(t, -1, mismatch(fill(b, seed(1, 3, n, kindSend)), seed(1, 2, n, kindSend)), n)
	}
	// Different kinds and lengths name different payloads.
	a, b := fill(make([]byte, 64), seed(1, 0, 64, kindSend)), fill(make([]byte, 64), seed(1, 0, 64, kindSendSE))
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, binary.LittleEndian.Uint64(fill(make([]byte, 64), seed(1, 0, 63, kindSend))), binary.LittleEndian.Uint64(a))
}

func TestDrawSize_InRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[bool]bool{}
	for range 5000 {
		n := drawSize(rng, 3, 1000)
		require.GreaterOrEqual(t, n, 3)
		require.LessOrEqual(t, n, 1000)
		seen[n < 10] = true
	}
	assert.True(t, seen[true] && seen[false], "small and large sizes")
	assert.Equal(t, 5, drawSize(rng, 5, 5))
	assert.Equal(t, 0, drawSize(rng, 0, 0))
}

// TestRun_ManyShortStreams_RFC5040_7: an association shuts down once every
// stream is closed or erroneous (RFC 5040 §7), so streams that finish
// before the last one is opened must not end the association under it:
// every stream is opened before any runs.
func TestRun_ManyShortStreams_RFC5040_7(t *testing.T) {
	// Every stream opens at once: the passive side lets them all wait for
	// its ULP (beyond MaxPendingInitiates an Initiate is answered with a
	// Terminate, RFC 5043 §6.4, which a loaded host reached).
	res, client, server := runLoopback(t, Config{Streams: 120, MaxSize: 64, Break: 7}, sctpllp.Config{MaxPendingInitiates: 120})
	require.NoError(t, res.Err())
	assert.Equal(t, uint64(120), res.Opened)
	require.NoError(t, AwaitEnd(client, 10*time.Second))
	require.NoError(t, AwaitEnd(server, 10*time.Second))
}
