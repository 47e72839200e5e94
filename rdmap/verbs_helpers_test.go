package rdmap

import (
	"context"
	"math"
)

// The blocking operations the tests use, each one Endpoint.Do.

func (e *Endpoint) send(ctx context.Context, b []byte) error {
	_, err := e.Do(ctx, SendWR{Op: WRSend, Local: b})
	return err
}

func (e *Endpoint) write(ctx context.Context, b []byte, rstag uint32, rto uint64) error {
	_, err := e.Do(ctx, SendWR{Op: WRWrite, Local: b, RemoteSTag: rstag, RemoteTO: rto})
	return err
}

func (e *Endpoint) writeImm(ctx context.Context, b []byte, rstag uint32, rto uint64, imm uint64, se bool) error {
	_, err := e.Do(ctx, SendWR{Op: WRWriteImm, Local: b, RemoteSTag: rstag, RemoteTO: rto, Imm: imm, Solicited: se})
	return err
}

func (e *Endpoint) read(ctx context.Context, sink *MR, off uint64, n uint32, rstag uint32, rto uint64) error {
	_, err := e.Do(ctx, SendWR{Op: WRRead, Sink: sink, SinkOffset: off, Length: n, RemoteSTag: rstag, RemoteTO: rto})
	return err
}

func (e *Endpoint) fetchAdd(ctx context.Context, rstag uint32, rto uint64, add, mask uint64) (uint64, error) {
	c, err := e.Do(ctx, SendWR{Op: WRFetchAdd, RemoteSTag: rstag, RemoteTO: rto, Add: add, AddMask: mask})
	return c.Orig, err
}

func (e *Endpoint) cmpSwap(ctx context.Context, rstag uint32, rto uint64, compare, compareMask, swap, swapMask uint64) (uint64, error) {
	c, err := e.Do(ctx, SendWR{Op: WRCmpSwap, RemoteSTag: rstag, RemoteTO: rto,
		Compare: compare, CompareMask: compareMask, Swap: swap, SwapMask: swapMask})
	return c.Orig, err
}

// swap is a CmpSwap with compare mask 0: RFC 7306 reserves the draft's
// unmasked Swap opcode.
func (e *Endpoint) swap(ctx context.Context, rstag uint32, rto uint64, v uint64) (uint64, error) {
	return e.cmpSwap(ctx, rstag, rto, 0, 0, v, math.MaxUint64)
}

func (e *Endpoint) immediate(ctx context.Context, imm uint64, se bool) error {
	_, err := e.Do(ctx, SendWR{Op: WRImmediate, Imm: imm, Solicited: se})
	return err
}

// tryPoll takes the oldest completion, if any.
func (cq *CQ) tryPoll() (Completion, bool) {
	var c [1]Completion
	if cq.PollN(c[:]) == 0 {
		return Completion{}, false
	}
	return c[0], true
}

// queued returns the number of completions waiting, overflowed ones too.
func (cq *CQ) queued() int {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.ring.Len() + cq.overflowLen()
}

// postSend1 posts one request, as PostSend of one.
func (e *Endpoint) postSend1(wr SendWR) error {
	_, err := e.PostSend(wr)
	return err
}

// newDevice returns a Device of the given limits, set up.
func newDevice(maxMRs int, maxBytes int64) *Device {
	d := &Device{MaxMRs: maxMRs, MaxRegisteredBytes: maxBytes}
	d.once.Do(d.setup)
	return d
}
