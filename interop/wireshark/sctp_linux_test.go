package wireshark

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// sentSeg is one DDP segment as the RDMAP endpoint handed it to the LLP:
// the header, the first octets of the payload, and the total length.
type sentSeg struct {
	head  []byte
	total int
}

// recStream records every DDP segment sent through an llp.Stream.
type recStream struct {
	llp.Stream
	mu   sync.Mutex
	segs []sentSeg
}

// SendSegment sends and, once the LLP took it, records the segment.
func (r *recStream) SendSegment(hdr, payload []byte) error {
	err := r.Stream.SendSegment(hdr, payload)
	if err == nil {
		head := append(bytes.Clone(hdr), payload[:min(len(payload), 64)]...)
		r.mu.Lock()
		r.segs = append(r.segs, sentSeg{head: head, total: len(hdr) + len(payload)})
		r.mu.Unlock()
	}
	return err
}

func (r *recStream) sent() []sentSeg {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sentSeg(nil), r.segs...)
}

// dirStream names one direction of one DDP stream.
type dirStream struct {
	fromClient bool
	stream     uint16
}

func (d dirStream) String() string {
	if d.fromClient {
		return fmt.Sprintf("client→server stream %d", d.stream)
	}
	return fmt.Sprintf("server→client stream %d", d.stream)
}

// wantControl is a session control message the test caused.
type wantControl struct {
	function    uint64
	privateData string
	ird, ord    int // enhanced codes only
}

// sctpRun is what the exchange did, for comparison with the decode.
type sctpRun struct {
	pcap     string
	port     int                       // the server's UDP port
	sent     map[dirStream][]sentSeg   // DDP segments per direction
	controls map[dirStream]wantControl // the first chunk of each direction

	// API-level values of stream 1 (RFC 5040 §4, RFC 7306 §5, §6).
	tmrSTag, sinkSTag, cmrSTag, ssinkSTag uint32
	inv1, inv2                            uint32
	tmrBase, sinkBase, cmrBase, ssinkBase uint64
	size, rsize                           int
	imm, writeImm                         uint64
	bogusSTag                             uint32
	term1, term2                          iwarp.TermCode
}

const (
	funcInitiate         = 0x001
	funcAccept           = 0x002
	funcReject           = 0x003
	funcTerminate        = 0x004
	funcEnhancedInitiate = 0x005
	funcEnhancedAccept   = 0x006
	funcEnhancedReject   = 0x007
)

// sctpExchange runs, over one userspace SCTP association on 127.0.0.1
// (pion, UDP, captured on lo), four DDP Stream Sessions: stream 1 with a
// plain Initiate/Accept carries every RDMAP operation, RDMA Reads in both
// directions, and ends with a Terminate provoked by a Write to an STag the
// responder never issued (RFC 5040 §7.2, RFC 5041 §7.1); stream 2 with an
// Enhanced Initiate/Accept (RFC 6581 §7) carries a Send and a Read and is
// aborted by the user (Terminate, local catastrophic error); stream 3 is
// rejected and stream 4 rejected with an Enhanced Reject (RFC 5043 §6.3).
func sctpExchange(t *testing.T) sctpRun {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := sctpllp.Config{Stack: pion.Stack(pion.Config{}), KeepIdle: true}
	ln, err := sctpllp.Listen("127.0.0.1:0", cfg)
	require.NoError(t, err)
	defer ln.Close()
	_, portStr, err := net.SplitHostPort(ln.Addr())
	require.NoError(t, err)
	port, err := strconv.Atoi(portStr)
	require.NoError(t, err)
	capt := startCapture(t, fmt.Sprintf("udp port %d", port))
	t.Cleanup(func() { capt.stop(t) }) // after a failure; a no-op otherwise

	type assocRes struct {
		a   *sctpllp.Association
		err error
	}
	acc := make(chan assocRes, 1)
	go func() { a, err := ln.Accept(ctx); acc <- assocRes{a, err} }()
	cli, err := sctpllp.Dial(ctx, ln.Addr(), cfg)
	require.NoError(t, err)
	ar := <-acc
	require.NoError(t, ar.err)
	srv := ar.a
	defer func() {
		_ = cli.Close()
		_ = srv.Close()
		<-cli.Done()
		<-srv.Done()
	}()

	run := sctpRun{port: port, sent: map[dirStream][]sentSeg{}, controls: map[dirStream]wantControl{}}

	// The passive side decides each Initiate by its stream.
	type decided struct {
		s   sctpllp.Session
		err error
	}
	passive := make(chan decided)
	go func() {
		for i := 0; i < 4; i++ {
			in, err := srv.Accept(ctx)
			if err != nil {
				passive <- decided{err: err}
				return
			}
			var d decided
			switch in.StreamID {
			case 1:
				d.s, d.err = in.Accept(sctpllp.AcceptParams{PrivateData: []byte("accept-1")})
			case 2:
				d.s, d.err = in.Accept(sctpllp.AcceptParams{PrivateData: []byte("accept-2"), IRD: 4, ORD: 4})
			case 3:
				d.err = in.Reject([]byte("reject-3"))
			default:
				d.err = in.RejectWith(sctpllp.AcceptParams{PrivateData: []byte("reject-4"), IRD: 2, ORD: 16})
			}
			passive <- d
		}
	}()
	cli1 := dirStream{true, 1}
	srv1 := dirStream{false, 1}
	cli2 := dirStream{true, 2}
	srv2 := dirStream{false, 2}

	cs1, err := cli.Open(ctx, 1, sctpllp.OpenRequest{PrivateData: []byte("initiate-1")})
	require.NoError(t, err)
	d := <-passive
	require.NoError(t, d.err)
	ss1 := d.s
	run.controls[cli1] = wantControl{function: funcInitiate, privateData: "initiate-1"}
	run.controls[srv1] = wantControl{function: funcAccept, privateData: "accept-1"}

	cs2, err := cli.Open(ctx, 2, sctpllp.OpenRequest{PrivateData: []byte("initiate-2"), Enhanced: true, IRD: 4, ORD: 4})
	require.NoError(t, err)
	d = <-passive
	require.NoError(t, d.err)
	ss2 := d.s
	run.controls[cli2] = wantControl{function: funcEnhancedInitiate, privateData: "initiate-2", ird: 4, ord: 4}
	run.controls[srv2] = wantControl{function: funcEnhancedAccept, privateData: "accept-2", ird: 4, ord: 4}

	var rej *sctpllp.RejectError
	_, err = cli.Open(ctx, 3, sctpllp.OpenRequest{PrivateData: []byte("initiate-3")})
	require.ErrorAs(t, err, &rej)
	require.NoError(t, (<-passive).err)
	assert.Equal(t, "reject-3", string(rej.PrivateData))
	run.controls[dirStream{true, 3}] = wantControl{function: funcInitiate, privateData: "initiate-3"}
	run.controls[dirStream{false, 3}] = wantControl{function: funcReject, privateData: "reject-3"}

	_, err = cli.Open(ctx, 4, sctpllp.OpenRequest{PrivateData: []byte("initiate-4"), Enhanced: true, IRD: 8, ORD: 8})
	require.ErrorAs(t, err, &rej)
	require.NoError(t, (<-passive).err)
	assert.True(t, rej.Enhanced)
	run.controls[dirStream{true, 4}] = wantControl{function: funcEnhancedInitiate, privateData: "initiate-4", ird: 8, ord: 8}
	run.controls[dirStream{false, 4}] = wantControl{function: funcEnhancedReject, privateData: "reject-4", ird: 2, ord: 16}

	// Stream 1: every operation.
	dev := new(rdmap.Device)
	cpd, spd := dev.AllocPD(), dev.AllocPD()
	crec1, srec1 := &recStream{Stream: cs1}, &recStream{Stream: ss1}
	cep, err := cpd.NewEndpoint(crec1, rdmap.EndpointConfig{})
	require.NoError(t, err)
	sep, err := spd.NewEndpoint(srec1, rdmap.EndpointConfig{})
	require.NoError(t, err)

	run.size, run.rsize = 20000, 5000 // several segments at the loopback MULPDU
	run.tmrBase, run.sinkBase, run.cmrBase, run.ssinkBase = 0x10000, 0x7000_0000_0000, 0x2000, 0
	target := make([]byte, run.size+8)
	tmr, err := spd.Register(target, rdmap.RemoteWrite|rdmap.RemoteRead|rdmap.RemoteAtomic|rdmap.LocalWrite,
		rdmap.MROption{Endpoint: sep}, rdmap.MROption{BaseTO: run.tmrBase})
	require.NoError(t, err)
	inv1, err := spd.Register(make([]byte, 64), rdmap.RemoteWrite, rdmap.MROption{Endpoint: sep}, rdmap.MROption{RemoteInvalidate: true})
	require.NoError(t, err)
	inv2, err := spd.Register(make([]byte, 64), rdmap.RemoteWrite, rdmap.MROption{Endpoint: sep}, rdmap.MROption{RemoteInvalidate: true})
	require.NoError(t, err)
	recv := make([][]byte, 10)
	for i := range recv {
		recv[i] = make([]byte, run.size)
		require.NoError(t, sep.PostRecv(uint64(i), recv[i]))
	}
	csrc := pattern(run.rsize, 9)
	cmr, err := cpd.Register(csrc, rdmap.RemoteRead, rdmap.MROption{Endpoint: cep}, rdmap.MROption{BaseTO: run.cmrBase})
	require.NoError(t, err)
	crecv := make([]byte, 100)
	require.NoError(t, cep.PostRecv(100, crecv))
	require.NoError(t, sep.Start())
	require.NoError(t, cep.Start())
	run.tmrSTag, run.cmrSTag, run.inv1, run.inv2 = tmr.STag(), cmr.STag(), inv1.STag(), inv2.STag()

	// RDMA Write and Read (RFC 5040 §5.1, §5.2), client to server.
	src := pattern(run.size, 1)
	require.NoError(t, errOf(cep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: src, RemoteSTag: tmr.STag(), RemoteTO: run.tmrBase})))
	sink, err := cpd.Register(make([]byte, run.size), rdmap.LocalWrite, rdmap.MROption{BaseTO: run.sinkBase})
	require.NoError(t, err)
	run.sinkSTag = sink.STag()
	require.NoError(t, errOf(cep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: sink, Length: uint32(run.size), RemoteSTag: tmr.STag(), RemoteTO: run.tmrBase})))
	require.Equal(t, src, sink.Bytes())
	// ... and the other direction: the server reads the client's buffer.
	ssink, err := spd.Register(make([]byte, run.rsize), rdmap.LocalWrite)
	require.NoError(t, err)
	run.ssinkSTag = ssink.STag()
	require.NoError(t, errOf(sep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: ssink, Length: uint32(run.rsize), RemoteSTag: cmr.STag(), RemoteTO: run.cmrBase})))
	require.Equal(t, csrc, ssink.Bytes())
	// A Send from the server.
	require.NoError(t, errOf(sep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("from the server")})))
	rc, err := cep.Config().RecvCQ.Poll(ctx)
	require.NoError(t, err)
	require.NoError(t, rc.Err)
	require.Equal(t, "from the server", string(crecv[:rc.Length]))

	// The Send family (RFC 5040 §5.3) and Immediate Data (RFC 7306 §6).
	run.imm, run.writeImm = 0x1122334455667788, 42
	sends := []rdmap.SendWR{
		{Op: rdmap.WRSend, Local: pattern(run.size, 2)},
		{Op: rdmap.WRSend, Solicited: true, Local: pattern(100, 3)},
		{Op: rdmap.WRSend, Local: nil},
		{Op: rdmap.WRSend, Invalidate: true, Local: pattern(7, 4), InvalidateSTag: inv1.STag()},
		{Op: rdmap.WRSend, Solicited: true, Invalidate: true, Local: pattern(9, 6), InvalidateSTag: inv2.STag()},
		{Op: rdmap.WRImmediate, Imm: run.imm},
		{Op: rdmap.WRImmediate, Imm: run.imm + 1, Solicited: true},
		{Op: rdmap.WRWriteImm, Local: pattern(3000, 5), RemoteSTag: tmr.STag(), RemoteTO: run.tmrBase, Imm: run.writeImm},
	}
	sendEach(ctx, t, cep, sep, sends, recv)
	// Atomics (RFC 7306 §5) on the zeroed word after the Write's range.
	origC, err := cep.Do(ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: tmr.STag(), RemoteTO: run.tmrBase + uint64(run.size), Add: 5})
	orig := origC.Orig
	require.NoError(t, err)
	require.Zero(t, orig)
	origC, err = cep.Do(ctx, rdmap.SendWR{Op: rdmap.WRCmpSwap, RemoteSTag: tmr.STag(), RemoteTO: run.tmrBase + uint64(run.size), Compare: 5, CompareMask: ^uint64(0), Swap: 99, SwapMask: ^uint64(0)})
	orig = origC.Orig
	require.NoError(t, err)
	require.Equal(t, uint64(5), orig)

	// A tagged segment for an unknown STag: the responder answers with a
	// Terminate carrying the offending DDP header (RFC 5040 §4.8).
	run.bogusSTag = tmr.STag() ^ 0x00FF0000
	h := iwarpwire.DDPTaggedHeader{Last: true, RsvdULP: iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), STag: run.bogusSTag, TO: 0x40}
	var hb [iwarpwire.DDPTaggedHeaderLen]byte
	require.NoError(t, crec1.SendSegment(h.Append(hb[:0]), []byte("intruder")))
	select {
	case <-cep.Done():
	case <-ctx.Done():
		t.Fatal("the initiator did not receive the Terminate")
	}
	var te *rdmap.TerminateError
	require.ErrorAs(t, cep.Err(), &te, "initiator: %v", cep.Err())
	run.term1 = te.Code
	<-sep.Done()

	// Stream 2: enhanced session, a Send and a Read, then a user abort.
	crec2, srec2 := &recStream{Stream: cs2}, &recStream{Stream: ss2}
	cep2, err := cpd.NewEndpoint(crec2, rdmap.EndpointConfig{IRD: 4, ORD: 4})
	require.NoError(t, err)
	sep2, err := spd.NewEndpoint(srec2, rdmap.EndpointConfig{IRD: 4, ORD: 4})
	require.NoError(t, err)
	src2 := pattern(300, 7)
	smr2, err := spd.Register(src2, rdmap.RemoteRead, rdmap.MROption{Endpoint: sep2})
	require.NoError(t, err)
	recv2 := make([]byte, 64)
	require.NoError(t, sep2.PostRecv(7, recv2))
	require.NoError(t, sep2.Start())
	require.NoError(t, cep2.Start())
	require.NoError(t, errOf(cep2.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("enhanced")})))
	rc, err = sep2.Config().RecvCQ.Poll(ctx)
	require.NoError(t, err)
	require.NoError(t, rc.Err)
	sink2, err := cpd.Register(make([]byte, len(src2)), rdmap.LocalWrite)
	require.NoError(t, err)
	require.NoError(t, errOf(cep2.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: sink2, Length: uint32(len(src2)), RemoteSTag: smr2.STag()})))
	require.Equal(t, src2, sink2.Bytes())
	require.NoError(t, cep2.Abort())
	<-cep2.Done()
	<-sep2.Done()
	require.ErrorAs(t, sep2.Err(), &te, "responder of stream 2: %v", sep2.Err())
	run.term2 = te.Code

	run.sent[cli1], run.sent[srv1] = crec1.sent(), srec1.sent()
	run.sent[cli2], run.sent[srv2] = crec2.sent(), srec2.sent()
	_ = cli.Close()
	_ = srv.Close()
	<-cli.Done()
	<-srv.Done()
	run.pcap = capt.stop(t)
	return run
}

// decodedRun is the dissector's view of a capture.
type decodedRun struct {
	packets  []pdmlPacket
	ddpPPIDs int                   // DATA chunks with PPID 16 or 17 (SCTP's count)
	chunks   []chunk               // chunks the dissector decoded
	byDir    map[dirStream][]chunk // ... per direction, in DDP-SSN order, without retransmissions
	problems []string              // Lua errors, malformed packets, expert warnings and errors
}

func decodeSCTP(t *testing.T, run sctpRun) decodedRun {
	t.Helper()
	// Without TSN analysis the SCTP dissector hands retransmitted DATA
	// chunks to the dissector too (with it, it marks them and skips them).
	pkts := tsharkPDML(t, run.pcap, "-o", "sctp.tsn_analysis:FALSE", "-d", fmt.Sprintf("udp.port==%d,sctp", run.port))
	dr := decodedRun{packets: pkts, byDir: map[dirStream][]chunk{}}
	for i, p := range pkts {
		frame := i + 1
		n := 0
		for _, v := range p.values("sctp.data_payload_proto_id") {
			if v == "16" || v == "17" {
				n++
			}
		}
		dr.ddpPPIDs += n
		cs := p.chunks(frame)
		require.Len(t, cs, n, "frame %d: every PPID 16/17 chunk decoded by the dissector", frame)
		dr.chunks = append(dr.chunks, cs...)
		for _, pr := range p.problems() {
			dr.problems = append(dr.problems, fmt.Sprintf("frame %d: %s", frame, pr))
		}
	}
	seen := map[string]chunk{}
	for _, c := range dr.chunks {
		ds := dirStream{fromClient: c.srcPort != run.port, stream: uint16(c.uint(t, "iwarp_sctp.stream"))}
		key := fmt.Sprintf("%v/%d", ds, c.uint(t, "iwarp_sctp.ssn"))
		if prev, ok := seen[key]; ok {
			// A retransmission decodes like the original.
			assert.Equal(t, prev.fields, c.fields, "frame %d retransmits frame %d", c.frame, prev.frame)
			continue
		}
		seen[key] = c
		dr.byDir[ds] = append(dr.byDir[ds], c)
	}
	for ds, cs := range dr.byDir {
		sort.Slice(cs, func(i, j int) bool {
			return cs[i].uint(t, "iwarp_sctp.ssn") < cs[j].uint(t, "iwarp_sctp.ssn")
		})
		dr.byDir[ds] = cs
	}
	return dr
}

// pdHex is private data as the dissector shows it (colon-separated hex).
func pdHex(s string) string {
	if s == "" {
		return ""
	}
	h := hex.EncodeToString([]byte(s))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// checkSegment compares a decoded DDP Segment Chunk with the segment the
// endpoint sent: buffer model, L, RDMAP opcode, STag and TO or QN, MSN and
// MO, Invalidate STag and payload length (RFC 5041 §4, RFC 5040 §4.1).
func checkSegment(t *testing.T, c chunk, s sentSeg) {
	t.Helper()
	where := fmt.Sprintf("frame %d SSN %d", c.frame, c.uint(t, "iwarp_sctp.ssn"))
	require.Equal(t, uint64(16), c.uint(t, "iwarp_sctp.ppid"), where)
	ctl := iwarpwire.DDPControl(s.head[0])
	assert.Equal(t, ctl.Tagged(), c.uint(t, "ddpsctp.t") == 1, where)
	assert.Equal(t, ctl.Last(), c.uint(t, "ddpsctp.l") == 1, where)
	assert.Equal(t, uint64(s.head[1]&0x0f), c.uint(t, "rdmap.opcode"), where)
	assert.Equal(t, uint64(s.total-ctl.HeaderLen()), c.uint(t, "ddpsctp.payload_len"), where)
	if ctl.Tagged() {
		h, _, err := iwarpwire.ParseDDPTaggedHeader(s.head)
		require.NoError(t, err)
		assert.Equal(t, uint64(h.STag), c.uint(t, "ddpsctp.stag"), where)
		assert.Equal(t, h.TO, c.uint(t, "ddpsctp.to"), where)
		assert.False(t, c.has("ddpsctp.qn"), where)
		return
	}
	h, _, err := iwarpwire.ParseDDPUntaggedHeader(s.head)
	require.NoError(t, err)
	assert.Equal(t, uint64(h.QN), c.uint(t, "ddpsctp.qn"), where)
	assert.Equal(t, uint64(h.MSN), c.uint(t, "ddpsctp.msn"), where)
	assert.Equal(t, uint64(h.MO), c.uint(t, "ddpsctp.mo"), where)
	assert.False(t, c.has("ddpsctp.stag"), where)
	if op := iwarp.RDMAPOpcode(h.RsvdULP[0] & 0x0f); iwarpwire.HasInvalidateSTag(op) {
		inv := uint64(h.RsvdULP[1])<<24 | uint64(h.RsvdULP[2])<<16 | uint64(h.RsvdULP[3])<<8 | uint64(h.RsvdULP[4])
		assert.Equal(t, inv, c.uint(t, "rdmap.inval_stag"), where)
	}
}

// TestDissectorDecodesOurSCTP_RFC5043_5_2 runs the shipped dissector
// (wireshark/iwarp-sctp.lua) in tshark over a capture of the project's own
// DDP over userspace SCTP: every PPID 16/17 DATA chunk is decoded by it,
// with no Lua error, malformed packet or expert warning; every opcode of
// RFC 5040 and RFC 7306 and every session control code of RFC 5043 §5.2.3
// and RFC 6581 §7 appears; each direction's chunks carry DDP-SSNs 0..n-1
// (RFC 5043 §5.2.1, §6.1), begin with the session control message the test
// caused (private data and IRD/ORD word included) and hold exactly the DDP
// segments the endpoints sent, field by field (STag, TO, QN, MSN, MO, L,
// opcode, length); and sampled headers equal the values the test passed to
// the API (Write, both Read directions, Sends with Invalidate, Immediate
// Data, atomics, both Terminates with their layer/type/code).
func TestDissectorDecodesOurSCTP_RFC5043_5_2(t *testing.T) {
	ensureTshark(t)
	requirePluginLoads(t)
	run := sctpExchange(t)
	dr := decodeSCTP(t, run)
	t.Logf("%d packets, %d PPID 16/17 chunks, %d decoded", len(dr.packets), dr.ddpPPIDs, len(dr.chunks))

	require.Empty(t, dr.problems, "Lua errors, malformed packets, expert warnings or errors")
	require.Positive(t, dr.ddpPPIDs)
	require.Len(t, dr.chunks, dr.ddpPPIDs, "100% of PPID 16/17 chunks decoded")

	// Every opcode and every function code is in the capture.
	opcodes, functions := map[uint64]int{}, map[uint64]int{}
	for _, c := range dr.chunks {
		if c.has("rdmap.opcode") {
			opcodes[c.uint(t, "rdmap.opcode")]++
		}
		if c.has("iwarp_sctp.function") {
			functions[c.uint(t, "iwarp_sctp.function")]++
		}
	}
	for op := uint64(0); op <= 0xB; op++ {
		assert.Positive(t, opcodes[op], "RDMAP opcode %#x (%v) decoded", op, iwarp.RDMAPOpcode(op))
	}
	for fc := uint64(funcInitiate); fc <= funcEnhancedReject; fc++ {
		assert.Positive(t, functions[fc], "function code %#x decoded", fc)
	}

	// Each direction: DDP-SSN 0..n-1, the opening control message, the
	// recorded segments, then nothing but a session Terminate.
	for ds, want := range run.controls {
		cs := dr.byDir[ds]
		require.NotEmpty(t, cs, "%v: no chunk decoded", ds)
		for i, c := range cs {
			require.Equal(t, uint64(i), c.uint(t, "iwarp_sctp.ssn"), "%v: DDP-SSNs without gaps from 0", ds)
		}
		first := cs[0]
		assert.Equal(t, uint64(17), first.uint(t, "iwarp_sctp.ppid"), ds.String())
		assert.Equal(t, want.function, first.uint(t, "iwarp_sctp.function"), ds.String())
		assert.Equal(t, pdHex(want.privateData), first.str("iwarp_sctp.pdata"), ds.String())
		pdl := len(want.privateData)
		if want.function >= funcEnhancedInitiate {
			assert.Equal(t, uint64(want.ird), first.uint(t, "iwarp_sctp.ird"), ds.String())
			assert.Equal(t, uint64(want.ord), first.uint(t, "iwarp_sctp.ord"), ds.String())
			assert.Equal(t, uint64(0), first.uint(t, "iwarp_sctp.flag_a"), ds.String())
			pdl += 4
		} else {
			assert.False(t, first.has("iwarp_sctp.ird"), ds.String())
		}
		assert.Equal(t, uint64(pdl), first.uint(t, "iwarp_sctp.pdata_len"), ds.String())

		sent := run.sent[ds]
		require.GreaterOrEqual(t, len(cs), 1+len(sent), "%v: %d chunks for %d segments", ds, len(cs), len(sent))
		for i, s := range sent {
			checkSegment(t, cs[1+i], s)
		}
		for _, c := range cs[1+len(sent):] {
			assert.Equal(t, uint64(17), c.uint(t, "iwarp_sctp.ppid"), "%v frame %d: after the segments", ds, c.frame)
			assert.Equal(t, uint64(funcTerminate), c.uint(t, "iwarp_sctp.function"), "%v frame %d", ds, c.frame)
			assert.Equal(t, uint64(0), c.uint(t, "iwarp_sctp.pdata_len"), "%v frame %d", ds, c.frame)
		}
		t.Logf("%v: %d chunks, %d DDP segments", ds, len(cs), len(sent))
	}
	for _, ds := range []dirStream{{true, 1}, {false, 1}, {true, 2}, {false, 2}} {
		assert.NotEmpty(t, run.sent[ds], "%v sent DDP segments", ds)
	}
	terminates := 0
	for _, c := range append(append([]chunk(nil), dr.byDir[dirStream{true, 1}]...), dr.byDir[dirStream{false, 1}]...) {
		if c.has("iwarp_sctp.function") && c.uint(t, "iwarp_sctp.function") == funcTerminate {
			terminates++
		}
	}
	assert.Positive(t, terminates, "stream 1 ends with a DDP Stream Session Terminate (RFC 5043 §6.2)")

	checkSamples(t, run, dr)
	writeTranscript(t, run, dr)
}

// segs returns the DDP segments of one direction with a given opcode.
func segs(t *testing.T, dr decodedRun, ds dirStream, op iwarp.RDMAPOpcode) []chunk {
	var out []chunk
	for _, c := range dr.byDir[ds] {
		if c.has("rdmap.opcode") && c.uint(t, "rdmap.opcode") == uint64(op) {
			out = append(out, c)
		}
	}
	return out
}

// checkTagged asserts that tagged segments place size octets at
// STag/TO contiguously, the last one with L (RFC 5041 §4.2).
func checkTagged(t *testing.T, cs []chunk, stag uint32, to uint64, size int, what string) {
	t.Helper()
	require.NotEmpty(t, cs, what)
	next := to
	for i, c := range cs {
		assert.Equal(t, uint64(stag), c.uint(t, "ddpsctp.stag"), "%s frame %d", what, c.frame)
		assert.Equal(t, next, c.uint(t, "ddpsctp.to"), "%s frame %d", what, c.frame)
		assert.Equal(t, i == len(cs)-1, c.uint(t, "ddpsctp.l") == 1, "%s frame %d", what, c.frame)
		next += c.uint(t, "ddpsctp.payload_len")
	}
	assert.Equal(t, to+uint64(size), next, what)
}

// checkSamples compares decoded headers with the values the test handed
// to the API.
func checkSamples(t *testing.T, run sctpRun, dr decodedRun) {
	cli, srv := dirStream{true, 1}, dirStream{false, 1}

	// RDMA Write: the 20000 octets at tmr's base; then the Write of Write
	// with Immediate (3000 octets, same TO). Then the bogus Write.
	writes := segs(t, dr, cli, iwarp.RDMAPOpWrite)
	n := len(writes)
	require.GreaterOrEqual(t, n, 3)
	checkTagged(t, writes[:n-2], run.tmrSTag, run.tmrBase, run.size, "RDMA Write")
	assert.Equal(t, run.bogusSTag, uint32(writes[n-1].uint(t, "ddpsctp.stag")), "bogus Write")

	// RDMA Read, client from server: Request (RFC 5040 §4.4) and Responses.
	rr := segs(t, dr, cli, iwarp.RDMAPOpReadRequest)
	require.Len(t, rr, 1)
	r := rr[0]
	assert.Equal(t, uint64(run.sinkSTag), r.uint(t, "rdmap.read.sink_stag"))
	assert.Equal(t, run.sinkBase, r.uint(t, "rdmap.read.sink_to"))
	assert.Equal(t, uint64(run.size), r.uint(t, "rdmap.read.size"))
	assert.Equal(t, uint64(run.tmrSTag), r.uint(t, "rdmap.read.src_stag"))
	assert.Equal(t, run.tmrBase, r.uint(t, "rdmap.read.src_to"))
	assert.Equal(t, uint64(iwarpwire.RDMAPQNReadRequest), r.uint(t, "ddpsctp.qn"))
	assert.Equal(t, uint64(1), r.uint(t, "ddpsctp.msn"))
	assert.Equal(t, uint64(0), r.uint(t, "ddpsctp.mo"))
	checkTagged(t, segs(t, dr, srv, iwarp.RDMAPOpReadResponse), run.sinkSTag, run.sinkBase, run.size, "Read Response to the client")

	// RDMA Read, server from client.
	rr = segs(t, dr, srv, iwarp.RDMAPOpReadRequest)
	require.Len(t, rr, 1)
	r = rr[0]
	assert.Equal(t, uint64(run.ssinkSTag), r.uint(t, "rdmap.read.sink_stag"))
	assert.Equal(t, run.ssinkBase, r.uint(t, "rdmap.read.sink_to"))
	assert.Equal(t, uint64(run.rsize), r.uint(t, "rdmap.read.size"))
	assert.Equal(t, uint64(run.cmrSTag), r.uint(t, "rdmap.read.src_stag"))
	assert.Equal(t, run.cmrBase, r.uint(t, "rdmap.read.src_to"))
	checkTagged(t, segs(t, dr, cli, iwarp.RDMAPOpReadResponse), run.ssinkSTag, run.ssinkBase, run.rsize, "Read Response to the server")

	// Sends on QN 0: MSN 1, 2, ... in order; the 20000-octet Send in
	// segments with contiguous MO (RFC 5041 §4.3).
	var qn0 []chunk
	for _, c := range dr.byDir[cli] {
		if c.has("ddpsctp.qn") && c.uint(t, "ddpsctp.qn") == 0 {
			qn0 = append(qn0, c)
		}
	}
	msn, mo := uint64(1), uint64(0)
	for _, c := range qn0 {
		assert.Equal(t, msn, c.uint(t, "ddpsctp.msn"), "frame %d", c.frame)
		assert.Equal(t, mo, c.uint(t, "ddpsctp.mo"), "frame %d", c.frame)
		mo += c.uint(t, "ddpsctp.payload_len")
		if c.uint(t, "ddpsctp.l") == 1 {
			msn, mo = msn+1, 0
		}
	}
	assert.Equal(t, uint64(9), msn, "eight untagged messages on QN 0 (five Sends, three Immediate Data)")
	big := segs(t, dr, cli, iwarp.RDMAPOpSend)
	require.NotEmpty(t, big)
	assert.Equal(t, uint64(1), big[0].uint(t, "ddpsctp.msn"))
	inv := segs(t, dr, cli, iwarp.RDMAPOpSendInvalidate)
	require.Len(t, inv, 1)
	assert.Equal(t, uint64(run.inv1), inv[0].uint(t, "rdmap.inval_stag"))
	inv = segs(t, dr, cli, iwarp.RDMAPOpSendSEInvalidate)
	require.Len(t, inv, 1)
	assert.Equal(t, uint64(run.inv2), inv[0].uint(t, "rdmap.inval_stag"))

	// Immediate Data (RFC 7306 §6.2): the plain one, the SE one and the
	// one of the Write with Immediate.
	imm := segs(t, dr, cli, iwarp.RDMAPOpImmediate)
	require.Len(t, imm, 2)
	assert.Equal(t, run.imm, imm[0].uint(t, "rdmap.immediate"))
	assert.Equal(t, run.writeImm, imm[1].uint(t, "rdmap.immediate"))
	immSE := segs(t, dr, cli, iwarp.RDMAPOpImmediateSE)
	require.Len(t, immSE, 1)
	assert.Equal(t, run.imm+1, immSE[0].uint(t, "rdmap.immediate"))
	wimm := writes[n-2]
	assert.Equal(t, uint64(run.tmrSTag), wimm.uint(t, "ddpsctp.stag"), "Write with Immediate")
	assert.Equal(t, run.tmrBase, wimm.uint(t, "ddpsctp.to"), "Write with Immediate")
	assert.Equal(t, uint64(3000), wimm.uint(t, "ddpsctp.payload_len"), "Write with Immediate")

	// Atomics (RFC 7306 §5.2): FetchAdd then CmpSwap on QN 1 after the
	// Read Request (MSN 2, 3); the responses on QN 3 (MSN 1, 2).
	ar := segs(t, dr, cli, iwarp.RDMAPOpAtomicRequest)
	require.Len(t, ar, 2)
	fa, cas := ar[0], ar[1]
	target := run.tmrBase + uint64(run.size)
	assert.Equal(t, uint64(0x0), fa.uint(t, "rdmap.atomic.opcode")) // FetchAdd (RFC 7306 §5.2.1 Figure 5)
	assert.Equal(t, uint64(run.tmrSTag), fa.uint(t, "rdmap.atomic.stag"))
	assert.Equal(t, target, fa.uint(t, "rdmap.atomic.to"))
	assert.Equal(t, uint64(5), fa.uint(t, "rdmap.atomic.add_data"))
	assert.Equal(t, uint64(2), fa.uint(t, "ddpsctp.msn"))
	assert.Equal(t, uint64(0x2), cas.uint(t, "rdmap.atomic.opcode")) // CmpSwap
	assert.Equal(t, uint64(run.tmrSTag), cas.uint(t, "rdmap.atomic.stag"))
	assert.Equal(t, target, cas.uint(t, "rdmap.atomic.to"))
	assert.Equal(t, uint64(5), cas.uint(t, "rdmap.atomic.compare_data"))
	assert.Equal(t, uint64(99), cas.uint(t, "rdmap.atomic.swap_data"))
	assert.Equal(t, uint64(3), cas.uint(t, "ddpsctp.msn"))
	resp := segs(t, dr, srv, iwarp.RDMAPOpAtomicResponse)
	require.Len(t, resp, 2)
	assert.Equal(t, fa.uint(t, "rdmap.atomic.req_id"), resp[0].uint(t, "rdmap.atomic.orig_req_id"))
	assert.Equal(t, uint64(0), resp[0].uint(t, "rdmap.atomic.orig_value"))
	assert.Equal(t, cas.uint(t, "rdmap.atomic.req_id"), resp[1].uint(t, "rdmap.atomic.orig_req_id"))
	assert.Equal(t, uint64(5), resp[1].uint(t, "rdmap.atomic.orig_value"))
	assert.Equal(t, uint64(iwarpwire.RDMAPQNAtomicResponse), resp[1].uint(t, "ddpsctp.qn"))
	assert.Equal(t, uint64(2), resp[1].uint(t, "ddpsctp.msn"))

	// Terminates (RFC 5040 §4.8): stream 1's names the bogus segment.
	term := segs(t, dr, srv, iwarp.RDMAPOpTerminate)
	require.Len(t, term, 1)
	tc := term[0]
	assert.Equal(t, uint64(run.term1.Layer), tc.uint(t, "rdmap.term.layer"))
	assert.Equal(t, uint64(run.term1.EType), tc.uint(t, "rdmap.term.etype"))
	assert.Equal(t, uint64(run.term1.Code), tc.uint(t, "rdmap.term.code"))
	assert.Equal(t, uint64(1), tc.uint(t, "rdmap.term.d"))
	assert.Equal(t, uint64(run.bogusSTag), tc.uint(t, "rdmap.term.ddp.stag"))
	assert.Equal(t, uint64(0x40), tc.uint(t, "rdmap.term.ddp.to"))
	assert.Equal(t, uint64(iwarp.RDMAPOpWrite), tc.uint(t, "rdmap.term.ddp.opcode"))
	assert.Equal(t, uint64(iwarpwire.RDMAPQNTerminate), tc.uint(t, "ddpsctp.qn"))
	t.Logf("stream 1 Terminate: %s (%v)", tc.str("rdmap.term.name"), run.term1)
	term = segs(t, dr, dirStream{true, 2}, iwarp.RDMAPOpTerminate)
	require.Len(t, term, 1)
	tc = term[0]
	assert.Equal(t, iwarp.Term.LocalCatastrophic, run.term2)
	assert.Equal(t, uint64(0), tc.uint(t, "rdmap.term.layer"))
	assert.Equal(t, uint64(0), tc.uint(t, "rdmap.term.etype"))
	assert.Equal(t, "RDMA / Local Catastrophic Error / None", tc.str("rdmap.term.name"))
	assert.False(t, tc.has("rdmap.term.ddp"))
}

// requirePluginLoads checks that tshark loads the plugin and registers its
// three protocols without a word on stderr.
func requirePluginLoads(t *testing.T) {
	t.Helper()
	cmd := tsharkWithPlugin(t, "-G", "protocols")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	requireQuietStderr(t, stderr.String())
	for _, p := range []string{"iwarp_sctp", "ddpsctp", "rdmap"} {
		assert.Contains(t, string(out), "\t"+p+"\n", "protocol %s registered", p)
	}
}

// writeTranscript writes, to the file named by WIRESHARK_TRANSCRIPT (for
// docs/wireshark.md), the summary line of every packet with a DDP chunk
// and tshark -V of one frame per kind of message.
func writeTranscript(t *testing.T, run sctpRun, dr decodedRun) {
	path := os.Getenv("WIRESHARK_TRANSCRIPT")
	if path == "" {
		return
	}
	want := []func(c chunk) bool{
		func(c chunk) bool { return c.str("iwarp_sctp.function") == "0x0005" },
		func(c chunk) bool { return c.str("iwarp_sctp.function") == "0x0007" },
		func(c chunk) bool { return c.str("rdmap.opcode") == "0x01" },
		func(c chunk) bool { return c.str("rdmap.opcode") == "0x04" },
		func(c chunk) bool { return c.str("rdmap.opcode") == "0x09" },
		func(c chunk) bool {
			return c.str("rdmap.opcode") == "0x0a" && c.str("rdmap.atomic.opcode") == "0x00000002"
		},
		func(c chunk) bool { return c.str("rdmap.opcode") == "0x0b" },
		func(c chunk) bool { return c.str("rdmap.opcode") == "0x07" && c.has("rdmap.term.ddp") },
	}
	var frames []string
	for _, w := range want {
		for _, c := range dr.chunks {
			if w(c) {
				frames = append(frames, "frame.number == "+strconv.Itoa(c.frame))
				break
			}
		}
	}
	base := []string{"-r", run.pcap, "-d", fmt.Sprintf("udp.port==%d,sctp", run.port)}
	summary, err := tsharkWithPlugin(t, append(base, "-Y", "iwarp_sctp")...).Output()
	require.NoError(t, err)
	detail, err := tsharkWithPlugin(t, append(base, "-V", "-O", "iwarp_sctp,ddpsctp,rdmap",
		"-Y", strings.Join(frames, " || "))...).Output()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(append(summary, "\n"...), detail...), 0o644))
}
