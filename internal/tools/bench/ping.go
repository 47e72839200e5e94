package bench

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// fillPattern fills b with the deterministic pattern of ping iteration seq,
// which both sides can recompute.
func fillPattern(b []byte, seq uint64) {
	x := seq*0x9E3779B97F4A7C15 | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
}

// PingLine is one iteration of a ping, for a live per-iteration print.
type PingLine struct {
	Stream int
	Seq    uint64
	Size   int
	RTT    time.Duration
}

// pingActive is the client of rping's exchange (docs/cli.md): for each
// iteration it fills its source half with the iteration's pattern and
// sends Immediate Data seq; the server reads the source (RDMA Read), checks
// it, writes it back into the client's sink half and answers with Write
// with Immediate Data seq; the client then compares sink and source.
func (c *conn) pingActive(ctx context.Context) (Report, error) {
	s := c.setup
	n := int(s.Size)
	buf := c.mr.Bytes()
	src, sink := buf[:n], buf[n:2*n]
	lat := newLatRecorder(true)
	start := time.Now()
	var seq uint64
	for ; s.Iters == 0 || seq < s.Iters; seq++ {
		if s.Iters == 0 && time.Since(start) >= s.Duration {
			break
		}
		fillPattern(src, seq)
		clear(sink)
		t0 := time.Now()
		if _, err := c.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRImmediate, Imm: seq}); err != nil {
			return Report{}, c.cause(err)
		}
		comp, err := c.recv(ctx)
		if err != nil {
			return Report{}, err
		}
		rtt := time.Since(t0)
		if !comp.HasImm || comp.Imm != seq {
			return Report{}, fmt.Errorf("ping %d: got %v imm=%d", seq, comp.Op, comp.Imm)
		}
		if err := c.repost(comp.WRID); err != nil {
			return Report{}, err
		}
		if !bytes.Equal(src, sink) {
			return Report{Status: statusVerifyError}, fmt.Errorf("ping %d: data written back differs from the source (%d octets)", seq, n)
		}
		lat.record(rtt)
		if c.ctr != nil {
			c.ctr.Ops.Add(1)
			c.ctr.Bytes.Add(uint64(n))
		}
		if c.onPing != nil {
			c.onPing(PingLine{Seq: seq, Size: n, RTT: rtt})
		}
	}
	elapsed := time.Since(start)
	if err := c.sendFin(ctx, seq); err != nil {
		return Report{}, err
	}
	return Report{Ops: seq, Bytes: seq * uint64(n), Elapsed: elapsed, Lat: lat.summary(), hist: lat}, nil
}

// pingReply is the server's half of one ping iteration.
func (c *conn) pingReply(ctx context.Context, comp rdmap.Completion) error {
	n := int(c.setup.Size)
	if !comp.HasImm {
		return fmt.Errorf("ping: %v instead of Immediate Data", comp.Op)
	}
	local := c.mr.Bytes()
	clear(local[:n])
	if _, err := c.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: c.mr, Length: uint32(n), RemoteSTag: c.peer.STag}); err != nil {
		return c.cause(err)
	}
	want := local[n : 2*n]
	fillPattern(want, comp.Imm)
	if !bytes.Equal(local[:n], want) {
		return fmt.Errorf("ping %d: data read from the client differs from the pattern", comp.Imm)
	}
	_, err := c.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWriteImm, Local: local[:n], RemoteSTag: c.peer.STag, RemoteTO: uint64(n), Imm: comp.Imm})
	return c.cause(err)
}
