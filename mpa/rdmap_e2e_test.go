package mpa_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/rdmapconf"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// e2eEnds are the two RDMAP endpoints of one MPA connection over TCP on
// 127.0.0.1 (RFC 5044 §7.1 startup, then RFC 5040 over FPDUs).
type e2eEnds struct {
	cliConn, srvConn *mpa.Conn
	cli, srv         *rdmap.Endpoint
	cliPD, srvPD     *rdmap.PD
}

// endpointConfig derives the RDMAP configuration from the negotiated MPA
// parameters: IRD/ORD (RFC 6581 §9.1) and the RTR (RFC 6581 §9.2).
func endpointConfig(p mpa.Params) rdmap.EndpointConfig {
	var cfg rdmap.EndpointConfig
	rdmapconf.Apply(&cfg, p.Initiator, p.Depths(), p.PeerToPeer, p.RTR)
	return cfg
}

// dialE2E connects an Initiator (cliCfg) to a Responder (srvCfg); prepare
// runs on each endpoint before Start (post receives there).
func dialE2E(t *testing.T, cliCfg, srvCfg *mpa.Config, prepare func(ep *rdmap.Endpoint, initiator bool)) *e2eEnds {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := mpa.Listen("tcp", "127.0.0.1:0", srvCfg)
	require.NoError(t, err)
	defer ln.Close()
	type res struct {
		c   *mpa.Conn
		err error
	}
	acc := make(chan res, 1)
	go func() {
		c, err := ln.Accept(ctx)
		acc <- res{c, err}
	}()
	cc, err := mpa.Dial(ctx, "tcp", ln.Addr().String(), cliCfg)
	require.NoError(t, err)
	r := <-acc
	require.NoError(t, r.err)
	dev := new(rdmap.Device)
	e := &e2eEnds{cliConn: cc, srvConn: r.c, cliPD: dev.AllocPD(), srvPD: dev.AllocPD()}
	e.cli, err = e.cliPD.NewEndpoint(cc, endpointConfig(cc.Params()))
	require.NoError(t, err)
	e.srv, err = e.srvPD.NewEndpoint(r.c, endpointConfig(r.c.Params()))
	require.NoError(t, err)
	if prepare != nil {
		prepare(e.cli, true)
		prepare(e.srv, false)
	}
	require.NoError(t, e.srv.Start())
	require.NoError(t, e.cli.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() { _ = e.srv.Close(ctx); close(done) }()
		_ = e.cli.Close(ctx)
		<-done
		<-e.cli.Done()
		<-e.srv.Done()
		<-cc.Done()
		<-r.c.Done()
	})
	return e
}

func fill(b []byte, seed byte) []byte {
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// runAllOperations drives every RDMAP operation (RFC 5040 §5, RFC 7306
// §5, §6) from the Initiator and, where it has a direction, from the
// Responder too, verifying the data at the other end.
func runAllOperations(t *testing.T, e *e2eEnds, size int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, dir := range []struct {
		name      string
		from, to  *rdmap.Endpoint
		fPD, toPD *rdmap.PD
		seed      byte
	}{
		{"initiator->responder", e.cli, e.srv, e.cliPD, e.srvPD, 1},
		{"responder->initiator", e.srv, e.cli, e.srvPD, e.cliPD, 2},
	} {
		t.Run(dir.name, func(t *testing.T) {
			from, to := dir.from, dir.to
			target := make([]byte, size+16)
			tmr, err := dir.toPD.Register(target, rdmap.LocalWrite|rdmap.RemoteWrite|rdmap.RemoteRead|rdmap.RemoteAtomic,
				rdmap.MROption{Endpoint: to}, rdmap.MROption{RemoteInvalidate: true})
			require.NoError(t, err)
			counterOff := uint64((size + 7) &^ 7)

			// RDMA Write (RFC 5040 §5.1), then RDMA Read of the same range.
			src := fill(make([]byte, size), dir.seed)
			require.NoError(t, errOf(from.Do(ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: src, RemoteSTag: tmr.STag()})))
			sink, err := dir.fPD.Register(make([]byte, size), rdmap.LocalWrite)
			require.NoError(t, err)
			require.NoError(t, errOf(from.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: sink, Length: uint32(size), RemoteSTag: tmr.STag()})))
			require.True(t, bytes.Equal(src, sink.Bytes()), "read-back after write (RFC 5040 §5.5 rule 12)")
			require.True(t, bytes.Equal(src, target[:size]), "write placed at the target")

			// Sends: plain, with SE, with Invalidate (RFC 5040 §5.3), then
			// Immediate Data and Write with Immediate (RFC 7306 §6).
			bufs := make([][]byte, 5)
			for i := range bufs {
				bufs[i] = make([]byte, size)
				require.NoError(t, to.PostRecv(uint64(100+i), bufs[i]))
			}
			msgs := [][]byte{fill(make([]byte, size), dir.seed+10), fill(make([]byte, size/2+1), dir.seed+11), fill(make([]byte, 3), dir.seed+12)}
			require.NoError(t, errOf(from.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: msgs[0]})))
			require.NoError(t, errOf(from.PostSend(rdmap.SendWR{ID: 1, Op: rdmap.WRSend, Solicited: true, Local: msgs[1]})))
			require.NoError(t, errOf(from.PostSend(rdmap.SendWR{ID: 2, Op: rdmap.WRSend, Invalidate: true, Local: msgs[2], InvalidateSTag: tmr.STag()})))
			for i := 0; i < 2; i++ {
				c, err := from.Config().SendCQ.Poll(ctx)
				require.NoError(t, err)
				require.NoError(t, c.Err)
				assert.Equal(t, uint64(i+1), c.WRID)
			}
			for i, m := range msgs {
				c, err := to.Config().RecvCQ.Poll(ctx)
				require.NoError(t, err)
				require.NoError(t, c.Err)
				assert.Equal(t, uint64(100+i), c.WRID)
				assert.Equal(t, len(m), c.Length)
				assert.True(t, bytes.Equal(m, bufs[i][:c.Length]), "send %d payload", i)
				assert.Equal(t, i == 1, c.Solicited)
				if i == 2 {
					assert.Equal(t, tmr.STag(), c.InvalidatedSTag)
				}
			}
			// The STag is now invalid (RFC 5040 §5.3): register a fresh one.
			tmr2, err := dir.toPD.Register(target, rdmap.LocalWrite|rdmap.RemoteWrite|rdmap.RemoteAtomic, rdmap.MROption{Endpoint: to})
			require.NoError(t, err)
			defer tmr2.Deregister()

			src2 := fill(make([]byte, size), dir.seed+20)
			require.NoError(t, errOf(from.Do(ctx, rdmap.SendWR{Op: rdmap.WRWriteImm, Local: src2, RemoteSTag: tmr2.STag(), Imm: 0xABCDEF0123456789})))
			c, err := to.Config().RecvCQ.Poll(ctx)
			require.NoError(t, err)
			require.NoError(t, c.Err)
			assert.True(t, c.HasImm)
			assert.Equal(t, uint64(0xABCDEF0123456789), c.Imm)
			assert.True(t, bytes.Equal(src2, target[:size]), "write placed before its immediate data (RFC 7306 §6)")
			require.NoError(t, errOf(from.Do(ctx, rdmap.SendWR{Op: rdmap.WRImmediate, Imm: 42, Solicited: true})))
			c, err = to.Config().RecvCQ.Poll(ctx)
			require.NoError(t, err)
			assert.Equal(t, uint64(42), c.Imm)
			assert.True(t, c.Solicited)

			// Atomics (RFC 7306 §5.1): FetchAdd ×3, CmpSwap hit and miss.
			binary.NativeEndian.PutUint64(target[counterOff:], 1000)
			for i := uint64(0); i < 3; i++ {
				origC, err := from.Do(ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: tmr2.STag(), RemoteTO: counterOff, Add: 7})
				orig := origC.Orig
				require.NoError(t, err)
				assert.Equal(t, 1000+7*i, orig)
			}
			origC, err := from.Do(ctx, rdmap.SendWR{Op: rdmap.WRCmpSwap, RemoteSTag: tmr2.STag(), RemoteTO: counterOff, Compare: 1021, CompareMask: ^uint64(0), Swap: 5, SwapMask: ^uint64(0)})
			orig := origC.Orig
			require.NoError(t, err)
			assert.Equal(t, uint64(1021), orig)
			origC, err = from.Do(ctx, rdmap.SendWR{Op: rdmap.WRCmpSwap, RemoteSTag: tmr2.STag(), RemoteTO: counterOff, Compare: 1, CompareMask: ^uint64(0), Swap: 9, SwapMask: ^uint64(0)})
			orig = origC.Orig
			require.NoError(t, err)
			assert.Equal(t, uint64(5), orig)
			assert.Equal(t, uint64(5), binary.NativeEndian.Uint64(target[counterOff:]))
			assert.NoError(t, from.Err())
			assert.NoError(t, to.Err())
			var left [1]rdmap.Completion
			assert.Zero(t, to.Config().RecvCQ.PollN(left[:]), "five receives, five completions")
		})
	}
}

// TestRDMAPOverMPA runs every RDMAP operation over MPA connections on
// 127.0.0.1 in each framing mode: CRC on and off (RFC 5044 §4.4), Markers
// in one or both directions (§4.3), small MULPDU forcing multi-segment
// messages (§4.5, RFC 5041 §5.2), MPA revision 1 and enhanced revision 2
// (RFC 6581 §6), and the three peer-to-peer RTR options (RFC 6581 §9.2).
func TestRDMAPOverMPA(t *testing.T) {
	cases := []struct {
		name     string
		cli, srv mpa.Config
		size     int
		check    func(t *testing.T, e *e2eEnds)
	}{
		{name: "rev2-enhanced-crc", cli: mpa.Config{Enhanced: true, IRD: 4, ORD: 4}, srv: mpa.Config{IRD: 4, ORD: 4}, size: 4096,
			check: func(t *testing.T, e *e2eEnds) {
				p := e.cliConn.Params()
				assert.True(t, p.CRC)
				assert.True(t, p.Enhanced)
				assert.Equal(t, 4, e.cli.Config().ORD)
			}},
		{name: "no-crc", cli: mpa.Config{Enhanced: true, NoCRC: true, IRD: 2, ORD: 2}, srv: mpa.Config{NoCRC: true, IRD: 2, ORD: 2}, size: 3000,
			check: func(t *testing.T, e *e2eEnds) { assert.False(t, e.cliConn.Params().CRC) }},
		{name: "crc-asked-by-responder-only", cli: mpa.Config{NoCRC: true}, srv: mpa.Config{}, size: 100,
			check: func(t *testing.T, e *e2eEnds) { assert.True(t, e.srvConn.Params().CRC) }},
		{name: "markers-both-crc", cli: mpa.Config{Markers: true}, srv: mpa.Config{Markers: true}, size: 9000,
			check: func(t *testing.T, e *e2eEnds) {
				p := e.cliConn.Params()
				assert.True(t, p.MarkersTx && p.MarkersRx)
			}},
		{name: "markers-responder-only-no-crc", cli: mpa.Config{NoCRC: true}, srv: mpa.Config{Markers: true, NoCRC: true}, size: 5000,
			check: func(t *testing.T, e *e2eEnds) {
				assert.True(t, e.cliConn.Params().MarkersTx)
				assert.False(t, e.cliConn.Params().MarkersRx)
			}},
		{name: "small-mulpdu-markers", cli: mpa.Config{Markers: true, MaxMULPDU: 200}, srv: mpa.Config{Markers: true, MaxMULPDU: 300}, size: 7000},
		{name: "rev1", cli: mpa.Config{Revision: iwarpwire.MPARev1}, srv: mpa.Config{}, size: 2048,
			check: func(t *testing.T, e *e2eEnds) { assert.Equal(t, uint8(iwarpwire.MPARev1), e.srvConn.Params().Revision) }},
		{name: "p2p-rtr-write", cli: mpa.Config{Enhanced: true, PeerToPeer: true, RTR: iwarp.RTRWrite, IRD: 2, ORD: 2},
			srv: mpa.Config{RTR: iwarp.RTRAll, IRD: 2, ORD: 2}, size: 1024},
		{name: "p2p-rtr-read", cli: mpa.Config{Enhanced: true, PeerToPeer: true, RTR: iwarp.RTRRead, IRD: 1, ORD: 1},
			srv: mpa.Config{RTR: iwarp.RTRRead | iwarp.RTRSend, IRD: 1, ORD: 1}, size: 1024},
		{name: "p2p-rtr-send", cli: mpa.Config{Enhanced: true, PeerToPeer: true, RTR: iwarp.RTRSend, IRD: 2, ORD: 2},
			srv: mpa.Config{RTR: iwarp.RTRSend, IRD: 2, ORD: 2}, size: 1024},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := dialE2E(t, &tc.cli, &tc.srv, nil)
			if tc.check != nil {
				tc.check(t, e)
			}
			runAllOperations(t, e, tc.size)
		})
	}
}

// TestRDMAPOverMPA_RTRFirst_RFC6581_5: in the peer-to-peer model the
// Responder may send first once the RTR arrived; the Initiator's RTR goes
// out before work requests posted ahead of Start, and the Responder's
// receive queue sees only the real Send (no completion for the RTR).
func TestRDMAPOverMPA_RTRFirst_RFC6581_5(t *testing.T) {
	for _, rtr := range []iwarp.RTR{iwarp.RTRSend, iwarp.RTRWrite, iwarp.RTRRead} {
		t.Run(rtr.String(), func(t *testing.T) {
			recv := make([]byte, 64)
			e := dialE2E(t, &mpa.Config{Enhanced: true, PeerToPeer: true, RTR: rtr, IRD: 1, ORD: 1},
				&mpa.Config{RTR: rtr, IRD: 1, ORD: 1},
				func(ep *rdmap.Endpoint, initiator bool) {
					if initiator {
						require.NoError(t, errOf(ep.PostSend(rdmap.SendWR{ID: 5, Op: rdmap.WRSend, Local: []byte("after-rtr")})))
					} else {
						require.NoError(t, ep.PostRecv(6, recv))
					}
				})
			assert.Equal(t, rtr, e.cliConn.Params().RTR)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := e.srv.Config().RecvCQ.Poll(ctx)
			require.NoError(t, err)
			require.NoError(t, c.Err)
			assert.Equal(t, uint64(6), c.WRID)
			assert.Equal(t, "after-rtr", string(recv[:c.Length]))
			c, err = e.cli.Config().SendCQ.Poll(ctx)
			require.NoError(t, err)
			assert.Equal(t, uint64(5), c.WRID, "no completion for the RTR")
			var left [1]rdmap.Completion
			assert.Zero(t, e.srv.Config().RecvCQ.PollN(left[:]))
			assert.Zero(t, e.cli.Config().SendCQ.PollN(left[:]))
		})
	}
}

// TestRDMAPOverMPA_MissingRTR_RFC6581_9_2: a peer-to-peer Responder whose
// first message is not the RTR sends Terminate 2/0/0x07 and the Initiator
// sees it.
func TestRDMAPOverMPA_MissingRTR_RFC6581_9_2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := mpa.Listen("tcp", "127.0.0.1:0", &mpa.Config{RTR: iwarp.RTRWrite})
	require.NoError(t, err)
	defer ln.Close()
	acc := make(chan *mpa.Conn, 1)
	go func() {
		c, err := ln.Accept(ctx)
		assert.NoError(t, err)
		acc <- c
	}()
	cc, err := mpa.Dial(ctx, "tcp", ln.Addr().String(), &mpa.Config{Enhanced: true, PeerToPeer: true, RTR: iwarp.RTRWrite})
	require.NoError(t, err)
	sc := <-acc
	require.NotNil(t, sc)
	dev := new(rdmap.Device)
	srv, err := dev.AllocPD().NewEndpoint(sc, endpointConfig(sc.Params()))
	require.NoError(t, err)
	// The Initiator's RDMAP layer is misconfigured: no RTR.
	cli, err := dev.AllocPD().NewEndpoint(cc, rdmap.EndpointConfig{})
	require.NoError(t, err)
	require.NoError(t, srv.PostRecv(1, make([]byte, 16)))
	require.NoError(t, srv.Start())
	require.NoError(t, cli.Start())
	_, err = cli.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("too early")})
	<-cli.Done()
	<-srv.Done()
	var te *rdmap.TerminateError
	require.True(t, errors.As(srv.Err(), &te), "responder error %v", srv.Err())
	assert.Equal(t, iwarp.Term.NoMatchingRTR, te.Code)
	require.True(t, errors.As(cli.Err(), &te), "initiator error %v (send: %v)", cli.Err(), err)
	assert.True(t, te.Remote)
	assert.Equal(t, iwarp.Term.NoMatchingRTR, te.Code)
	<-cc.Done()
	<-sc.Done()
}

// BenchmarkRDMAPOverMPA_Write measures RDMA Writes of 64 KiB over one MPA
// connection on 127.0.0.1 (RFC 5040 §5.1 over RFC 5044 FPDUs), with and
// without CRC32c.
func BenchmarkRDMAPOverMPA_Write(b *testing.B) {
	for _, tc := range []struct {
		name  string
		noCRC bool
	}{{"crc", false}, {"nocrc", true}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ln, err := mpa.Listen("tcp", "127.0.0.1:0", &mpa.Config{NoCRC: tc.noCRC, IRD: 1, ORD: 1})
			require.NoError(b, err)
			defer ln.Close()
			acc := make(chan *mpa.Conn, 1)
			go func() {
				c, _ := ln.Accept(ctx)
				acc <- c
			}()
			cc, err := mpa.Dial(ctx, "tcp", ln.Addr().String(), &mpa.Config{Enhanced: true, NoCRC: tc.noCRC, IRD: 1, ORD: 1})
			require.NoError(b, err)
			sc := <-acc
			require.NotNil(b, sc)
			dev := new(rdmap.Device)
			srv, err := dev.AllocPD().NewEndpoint(sc, endpointConfig(sc.Params()))
			require.NoError(b, err)
			cli, err := dev.AllocPD().NewEndpoint(cc, endpointConfig(cc.Params()))
			require.NoError(b, err)
			target, err := srv.PD().Register(make([]byte, 64<<10), rdmap.RemoteWrite, rdmap.MROption{Endpoint: srv})
			require.NoError(b, err)
			require.NoError(b, srv.Start())
			require.NoError(b, cli.Start())
			src := fill(make([]byte, 64<<10), 9)
			const window = 32
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			b.ResetTimer()
			posted := 0
			for i := 0; i < b.N; i++ {
				if posted == window {
					c, err := cli.Config().SendCQ.Poll(ctx)
					require.NoError(b, err)
					require.NoError(b, c.Err)
					posted--
				}
				require.NoError(b, errOf(cli.PostSend(rdmap.SendWR{ID: uint64(i), Op: rdmap.WRWrite, Local: src, RemoteSTag: target.STag()})))
				posted++
			}
			for ; posted > 0; posted-- {
				c, err := cli.Config().SendCQ.Poll(ctx)
				require.NoError(b, err)
				require.NoError(b, c.Err)
			}
			b.StopTimer()
			done := make(chan struct{})
			go func() { _ = srv.Close(ctx); close(done) }()
			_ = cli.Close(ctx)
			<-done
			<-cli.Done()
			<-srv.Done()
		})
	}
}
