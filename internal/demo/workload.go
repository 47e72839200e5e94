// Package demo runs the loopback demonstration of sctp-rdma: a passive
// and an active endpoint over one SCTP association, many DDP streams
// running every RDMA operation concurrently with byte-for-byte
// verification, and one stream deliberately broken by a protocol error
// while the others finish. It is shared by `sctp-rdma demo` and the
// end-to-end tests.
package demo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/sctp-rdma/sctp-rdma/ddp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// pattern fills b with a deterministic pseudo-random sequence derived from
// the stream id and a purpose tag, so that both sides can verify it.
func pattern(b []byte, sid uint16, tag byte) {
	x := uint64(sid)<<32 | uint64(tag)<<24 | 0x9E3779B9
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
}

const (
	tagWrite    = 'W'
	tagSend     = 'S'
	tagWriteImm = 'I'
)

// advert is the passive side's first Send: where the client may write.
// The active side posts its buffer before the endpoint starts.
const advertLen = 16

// prepareAdvert returns a Prepare hook posting adv as the first receive.
func prepareAdvert(adv []byte) func(*rdmap.Endpoint) error {
	return func(ep *rdmap.Endpoint) error { return ep.PostRecv(rdmap.RecvWR{ID: 1, Buf: adv}) }
}

func putAdvert(stag uint32, size, counterOff uint64) []byte {
	b := make([]byte, advertLen)
	binary.BigEndian.PutUint32(b[0:], stag)
	binary.BigEndian.PutUint32(b[4:], uint32(size))
	binary.BigEndian.PutUint64(b[8:], counterOff)
	return b
}

// immFor is the Immediate Data the client sends on stream sid.
func immFor(sid uint16) uint64 { return uint64(sid)<<32 | 0x1D_A7A0 }

// Atomic script: three FetchAdds of fetchAddStep, then a CmpSwap of the
// resulting value to finalCounter.
const (
	fetchAddStep = 5
	finalCounter = 0xC0FFEE
)

// StreamResult is what happened on one stream.
type StreamResult struct {
	ID        uint16
	Size      int
	Ops       int   // operations completed successfully (client side)
	Bytes     int64 // payload octets moved by the client's operations
	Err       error // nil if every operation succeeded and was verified
	Broken    bool  // the stream the demo broke on purpose
	Erroneous bool  // labelled erroneous by the stream manager
	// Terminate is the Terminate the victim put on the wire for the
	// broken stream, as received by the client.
	Terminate *rdmap.TerminateError
	Elapsed   time.Duration
}

// serveStream is the passive side of the per-stream script.
func serveStream(ctx context.Context, pd *rdmap.PD, s *streams.Stream, size int) error {
	ep := s.Endpoint()
	counterOff := uint64((size + 7) &^ 7)
	target, err := pd.Register(make([]byte, counterOff+8),
		rdmap.LocalWrite|rdmap.RemoteWrite|rdmap.RemoteRead|rdmap.RemoteAtomic, rdmap.WithEndpoint(ep))
	if err != nil {
		return err
	}
	defer target.Deregister()
	// Two receives: the client's Send and its Immediate Data.
	sendBuf := make([]byte, size)
	for i, b := range [][]byte{sendBuf, make([]byte, 8)} {
		if err := ep.PostRecv(rdmap.RecvWR{ID: uint64(i + 1), Buf: b}); err != nil {
			return err
		}
	}
	if err := ep.Send(ctx, putAdvert(target.STag(), uint64(size), counterOff)); err != nil {
		return fmt.Errorf("advertise: %w", err)
	}
	want := make([]byte, size)
	for got := 0; got < 2; got++ {
		c, err := ep.RecvCQ().Poll(ctx)
		if err != nil {
			return err
		}
		if c.Err != nil {
			return fmt.Errorf("receive %d: %w", c.WRID, c.Err)
		}
		switch c.WRID {
		case 1: // the Send
			pattern(want, s.ID(), tagSend)
			if c.Length != size || string(sendBuf[:c.Length]) != string(want) {
				return fmt.Errorf("send payload corrupt (len %d, crc %08x want %08x)",
					c.Length, crc32.ChecksumIEEE(sendBuf[:c.Length]), crc32.ChecksumIEEE(want))
			}
		case 2: // Immediate Data after the Write: RFC 7306 §6, the Write is placed
			if !c.HasImm || c.Imm != immFor(s.ID()) {
				return fmt.Errorf("immediate data %#x, want %#x", c.Imm, immFor(s.ID()))
			}
			pattern(want, s.ID(), tagWriteImm)
			if string(target.Bytes()[:size]) != string(want) {
				return errors.New("write-with-immediate data corrupt at the target")
			}
			if v := binary.NativeEndian.Uint64(target.Bytes()[counterOff:]); v != finalCounter {
				return fmt.Errorf("atomic counter %#x, want %#x", v, finalCounter)
			}
		}
	}
	// Wait for the client's graceful close.
	select {
	case <-ep.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := ep.Err(); !errors.Is(err, rdmap.ErrPeerClosed) && !errors.Is(err, rdmap.ErrClosed) {
		return err
	}
	return nil
}

// runStream is the active side of the per-stream script. If breakIt is
// set, it sends a malformed segment after the advertisement instead.
func runStream(ctx context.Context, pd *rdmap.PD, s *streams.Stream, adv []byte, res *StreamResult, breakIt bool) error {
	ep := s.Endpoint()
	c, err := ep.RecvCQ().Poll(ctx)
	if err != nil {
		return fmt.Errorf("advertisement: %w", err)
	}
	if c.Err != nil {
		return fmt.Errorf("advertisement: %w", c.Err)
	}
	if c.Length != advertLen {
		return fmt.Errorf("advertisement of %d octets", c.Length)
	}
	rstag := binary.BigEndian.Uint32(adv[0:])
	size := int(binary.BigEndian.Uint32(adv[4:]))
	counterOff := binary.BigEndian.Uint64(adv[8:])

	if breakIt {
		return breakStream(ctx, s, res, rstag)
	}

	sink, err := pd.Register(make([]byte, size+8), rdmap.LocalWrite, rdmap.WithEndpoint(ep))
	if err != nil {
		return err
	}
	defer sink.Deregister()
	op := func(n int) { res.Ops++; res.Bytes += int64(n) }

	// RDMA Write, then a Read of the same range must see it (RFC 5040 §5.5 rule 12).
	src := make([]byte, size)
	pattern(src, s.ID(), tagWrite)
	if err := ep.Write(ctx, src, rstag, 0); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	op(size)
	if err := ep.Read(ctx, sink, 0, uint32(size), rstag, 0); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	op(size)
	if string(sink.Bytes()[:size]) != string(src) {
		return errors.New("read-back after write differs")
	}
	// Send.
	pattern(src, s.ID(), tagSend)
	if err := ep.Send(ctx, src); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	op(size)
	// Atomics (RFC 7306 §5): FetchAdd ×3 then CmpSwap.
	for i := uint64(0); i < 3; i++ {
		orig, err := ep.FetchAdd(ctx, rstag, counterOff, fetchAddStep, 0) // mask 0: one 64-bit field
		if err != nil {
			return fmt.Errorf("fetchadd: %w", err)
		}
		if orig != i*fetchAddStep {
			return fmt.Errorf("fetchadd returned %d, want %d", orig, i*fetchAddStep)
		}
		op(8)
	}
	orig, err := ep.CmpSwap(ctx, rstag, counterOff, 3*fetchAddStep, ^uint64(0), finalCounter, ^uint64(0))
	if err != nil {
		return fmt.Errorf("cmpswap: %w", err)
	}
	if orig != 3*fetchAddStep {
		return fmt.Errorf("cmpswap returned %d, want %d", orig, 3*fetchAddStep)
	}
	op(8)
	// Write with Immediate Data: the peer checks the data when the
	// immediate arrives.
	pattern(src, s.ID(), tagWriteImm)
	if err := ep.WriteImm(ctx, src, rstag, 0, immFor(s.ID()), true); err != nil {
		return fmt.Errorf("write-imm: %w", err)
	}
	op(size + 8)
	// Read the counter back: the peer's Read Response follows its delivery
	// of everything before.
	if err := ep.Read(ctx, sink, uint64(size), 8, rstag, counterOff); err != nil {
		return fmt.Errorf("read counter: %w", err)
	}
	op(8)
	if v := binary.NativeEndian.Uint64(sink.Bytes()[size:]); v != finalCounter {
		return fmt.Errorf("counter read back %#x, want %#x", v, finalCounter)
	}
	return ep.Close(ctx)
}

// breakStream puts a tagged DDP segment for an STag the peer never
// registered on the wire, bypassing the local RDMAP checks. The peer must
// answer with a Terminate "DDP layer, tagged buffer error, invalid STag"
// (RFC 5041 §7.2) on this stream only.
func breakStream(ctx context.Context, s *streams.Stream, res *StreamResult, rstag uint32) error {
	h := ddp.TaggedHeader{Last: true, RsvdULP: rdmap.ControlByte(rdmap.OpWrite), STag: rstag ^ 0x5A5A5A00, TO: 0}
	var hb [ddp.TaggedHeaderLen]byte
	if err := s.Session().SendSegment(h.Append(hb[:0]), []byte("not for you")); err != nil {
		return fmt.Errorf("inject: %w", err)
	}
	ep := s.Endpoint()
	select {
	case <-ep.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	var te *rdmap.TerminateError
	if !errors.As(ep.Err(), &te) || !te.Remote {
		return fmt.Errorf("expected a Terminate from the peer, got %v", ep.Err())
	}
	res.Terminate = te
	return nil
}
