package mpa

import (
	"encoding/binary"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"net"

	"github.com/sctp-rdma/sctp-rdma/llp"
)

// mssRefreshEvery is how many segments pass between readings of the TCP
// MSS (RFC 5044 §4.5: MULPDU follows EMSS changes).
const mssRefreshEvery = 256

// gatherThreshold is the ULPDU size from which an unmarked FPDU is sent
// with writev instead of being copied into the transmit buffer: below it
// one copy is cheaper than the scatter-gather system call.
const gatherThreshold = 8192

// SendSegment implements llp.Stream: hdr followed by payload becomes the
// ULPDU of one FPDU (RFC 5044 §3: exactly one ULPDU per FPDU), with pad,
// CRC32c (zero when CRCs are not in use, RFC 5044 §4.1) and, when the peer
// asked for them, Markers at its 512-octet stream positions (RFC 5044
// §4.3), written to TCP in one call. A segment over MULPDU is rejected with
// an error wrapping llp.ErrSegmentTooLarge. On a Responder it first waits
// until one FPDU has been received and validated (RFC 5044 §7.1.2 rule 4),
// which needs Start to have been called, or until the receive side ends,
// Close or Abort. It blocks while TCP applies flow control.
func (c *Conn) SendSegment(hdr, payload []byte) error {
	// Large unmarked FPDUs go out with writev, without copying the
	// payload; nothing is allocated.
	n := len(hdr) + len(payload)
	if err := c.canSend(n); err != nil {
		return err
	}
	c.txMu.Lock()
	defer c.txMu.Unlock()
	if c.txClosed {
		return c.stateErr()
	}
	if c.batch.segs > 0 {
		// The last segment of a message whose others are held: all in
		// one writev.
		if c.batch.add(c.params.CRC, hdr, payload) {
			return c.flushBatch()
		}
		if err := c.flushBatch(); err != nil {
			return err
		}
	}
	var wire int
	var err error
	if c.params.MarkersTx || n < gatherThreshold {
		if c.txBuf == nil {
			c.txBuf = make([]byte, 0, c.txCap)
		}
		c.txBuf, _ = appendFPDU(c.txBuf[:0], c.txPos, c.params.MarkersTx, c.params.CRC, hdr, payload)
		wire = len(c.txBuf)
		_, err = c.nc.Write(c.txBuf)
	} else {
		wire, err = c.writeGather(hdr, payload)
	}
	if err != nil {
		return c.ioError("send", err)
	}
	c.sent(wire, n)
	return nil
}

// buffersWriter is implemented by a net.Conn that wraps a TCP connection
// (a recorder, package capture) and can still send several buffers with
// one writev: net.Buffers.WriteTo uses writev only on the net package's
// own conns, so without it a wrapped conn would take one write per piece
// of each FPDU.
type buffersWriter interface {
	WriteBuffers(b *net.Buffers) (int64, error)
}

// writeGather sends an unmarked FPDU as ULPDU_Length, hdr, payload and
// pad+CRC with one writev (net.Buffers), computing the CRC over the pieces
// without copying them.
func (c *Conn) writeGather(hdr, payload []byte) (int, error) {
	ulen := len(hdr) + len(payload)
	pad := padLen(ulen)
	binary.BigEndian.PutUint16(c.lenWord[:], uint16(ulen))
	c.trailer = [len(c.trailer)]byte{}
	var crc uint32
	if c.params.CRC {
		crc = updateCRC32c(0, c.lenWord[:])
		crc = updateCRC32c(crc, hdr)
		crc = updateCRC32c(crc, payload)
		crc = updateCRC32c(crc, c.trailer[:pad])
	}
	binary.LittleEndian.PutUint32(c.trailer[pad:], crc) // RFC 5044 §4.4, LSB first
	c.iov = [4][]byte{c.lenWord[:], hdr, payload, c.trailer[:pad+iwarpwire.MPACRCLen]}
	c.bufs = c.iov[:]
	wire := iwarpwire.MPAFPDUHeaderLen + ulen + pad + iwarpwire.MPACRCLen
	err := c.writePieces(&c.bufs, wire)
	c.iov = [4][]byte{} // do not retain the caller's slices
	c.bufs = nil
	return wire, err
}

// writePieces sends the n octets of pieces: with one writev on a TCP
// connection (or a BuffersWriter); on anything else (a TLS connection,
// where every Write is a record of its own) joined into one Write. txMu
// is held.
func (c *Conn) writePieces(pieces *net.Buffers, n int) error {
	switch nc := c.nc.(type) {
	case buffersWriter:
		_, err := nc.WriteBuffers(pieces)
		return err
	case *net.TCPConn:
		_, err := pieces.WriteTo(nc)
		return err
	}
	if cap(c.joined) < n {
		c.joined = make([]byte, 0, max(n, 2*cap(c.joined)))
	}
	b := c.joined[:0]
	for _, p := range *pieces {
		b = append(b, p...)
	}
	_, err := c.nc.Write(b)
	return err
}

// canSend checks a segment of n octets against the MULPDU and, on a
// Responder, waits for the first FPDU received (RFC 5044 §7.1.2 rule 4).
func (c *Conn) canSend(n int) error {
	if m := c.MULPDU(); n > m {
		return fmt.Errorf("mpa: %d-octet segment > MULPDU %d: %w", n, m, llp.ErrSegmentTooLarge)
	}
	select {
	case <-c.firstRx:
	default:
		select {
		case <-c.firstRx:
		case <-c.done:
			return c.stateErr()
		}
	}
	return nil
}

// Batches of FPDUs (llp.Batcher): the FPDUs of one DDP message are written
// with one writev, as Linux siw sends them with MSG_MORE, instead of one
// system call (and, with TCP_NODELAY, one pushed TCP segment) each. With a
// path MTU of 1500 a 64 KiB RDMA Write is 45 FPDUs.
const (
	// maxBatchFPDUs bounds the FPDUs of a batch: three writev pieces
	// each, well below IOV_MAX (1024).
	maxBatchFPDUs = 64
	// maxBatchOctets bounds the octets a batch holds before it is sent.
	maxBatchOctets = 256 << 10
	// batchHead and batchTail are the room each FPDU of a batch has in
	// the arena for its length word and DDP header, and for its pad and
	// CRC.
	batchHead, batchTail = iwarpwire.MPAFPDUHeaderLen + 30, 3 + iwarpwire.MPACRCLen
)

// txBatch holds FPDUs passed to SendSegmentMore until the message's last
// segment (or a full batch) sends them. The payloads are the caller's
// (llp.Batcher: unchanged until the last segment); length words, headers,
// pads and CRCs are in arena, made once.
type txBatch struct {
	bufs  net.Buffers // the writev pieces, in order
	arena []byte
	segs  int
	wire  int    // octets on the wire
	ulp   uint64 // ULPDU octets
}

// add appends the unmarked FPDU of hdr and payload; it reports false, and
// adds nothing, if the batch has no room for it.
func (b *txBatch) add(crcOn bool, hdr, payload []byte) bool {
	if b.segs == maxBatchFPDUs || len(hdr) > batchHead-iwarpwire.MPAFPDUHeaderLen || b.wire+len(hdr)+len(payload)+batchHead+batchTail > maxBatchOctets {
		return false
	}
	if b.arena == nil {
		b.arena = make([]byte, maxBatchFPDUs*(batchHead+batchTail))
		b.bufs = make(net.Buffers, 0, 3*maxBatchFPDUs)
	}
	ulen := len(hdr) + len(payload)
	pad := padLen(ulen)
	slot := b.arena[b.segs*(batchHead+batchTail):]
	head := slot[:iwarpwire.MPAFPDUHeaderLen+len(hdr)]
	binary.BigEndian.PutUint16(head, uint16(ulen))
	copy(head[iwarpwire.MPAFPDUHeaderLen:], hdr)
	tail := slot[batchHead : batchHead+pad+iwarpwire.MPACRCLen]
	clear(tail[:pad])
	var crc uint32
	if crcOn {
		crc = updateCRC32c(0, head)
		crc = updateCRC32c(crc, payload)
		crc = updateCRC32c(crc, tail[:pad])
	}
	binary.LittleEndian.PutUint32(tail[pad:], crc) // RFC 5044 §4.4, LSB first
	b.bufs = append(b.bufs, head)
	if len(payload) > 0 {
		b.bufs = append(b.bufs, payload)
	}
	b.bufs = append(b.bufs, tail)
	b.segs++
	b.wire += iwarpwire.MPAFPDUHeaderLen + ulen + pad + iwarpwire.MPACRCLen
	b.ulp += uint64(ulen)
	return true
}

// SendSegmentMore implements llp.Batcher: the FPDU of hdr and payload is
// held, with the others of its message, until the message's last segment
// (SendSegment) or a full batch (64 FPDUs, 256 KiB) sends them in one
// writev. With Markers (RFC 5044 §4.3) it is SendSegment. The checks and
// the Responder's wait are SendSegment's.
func (c *Conn) SendSegmentMore(hdr, payload []byte) error {
	if c.params.MarkersTx {
		return c.SendSegment(hdr, payload)
	}
	n := len(hdr) + len(payload)
	if err := c.canSend(n); err != nil {
		return err
	}
	c.txMu.Lock()
	defer c.txMu.Unlock()
	select {
	case <-c.done: // Close or Abort: nothing is held any more
		return c.stateErr()
	default:
	}
	if c.txClosed {
		return c.stateErr()
	}
	if c.batch.add(c.params.CRC, hdr, payload) {
		return nil
	}
	if c.batch.segs > 0 {
		if err := c.flushBatch(); err != nil {
			return err
		}
	}
	if !c.batch.add(c.params.CRC, hdr, payload) { // a header too long to batch
		wire, err := c.writeGather(hdr, payload)
		if err != nil {
			return c.ioError("send", err)
		}
		c.sent(wire, n)
	}
	return nil
}

// Flush implements llp.Batcher: the FPDUs SendSegmentMore holds leave now,
// in one writev.
func (c *Conn) Flush() error {
	c.txMu.Lock()
	defer c.txMu.Unlock()
	if c.batch.segs == 0 {
		return nil
	}
	if c.txClosed {
		return c.stateErr()
	}
	return c.flushBatch()
}

// dropBatch forgets the held FPDUs (Abort); txMu is held.
func (c *Conn) dropBatch() {
	clear(c.batch.bufs)
	c.batch.bufs, c.batch.segs, c.batch.wire, c.batch.ulp = c.batch.bufs[:0], 0, 0, 0
}

// flushBatch writes the held FPDUs with one writev; txMu is held. The
// batch is empty afterwards, also after an error.
func (c *Conn) flushBatch() error {
	b := &c.batch
	// writePieces consumes the slice it is given: c.bufs, not a local
	// whose address would escape (an allocation per flush).
	c.bufs = b.bufs
	err := c.writePieces(&c.bufs, b.wire)
	c.bufs = nil
	wire, segs, ulp := b.wire, b.segs, b.ulp
	clear(b.bufs) // do not retain the caller's payloads
	b.bufs, b.segs, b.wire, b.ulp = b.bufs[:0], 0, 0, 0
	if err != nil {
		return c.ioError("send", err)
	}
	c.txPos += uint64(wire)
	c.sentSegs.Add(uint64(segs))
	c.sentBytes.Add(ulp)
	for range segs {
		if c.sendCount++; c.sendCount%mssRefreshEvery == 0 {
			c.refreshMULPDU()
		}
	}
	return nil
}

// sent counts one FPDU of wire octets carrying n ULPDU octets; txMu is
// held.
func (c *Conn) sent(wire, n int) {
	c.txPos += uint64(wire)
	c.sentSegs.Add(1)
	c.sentBytes.Add(uint64(n))
	if c.sendCount++; c.sendCount%mssRefreshEvery == 0 {
		c.refreshMULPDU()
	}
}
