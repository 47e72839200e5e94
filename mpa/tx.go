package mpa

import (
	"encoding/binary"
	"fmt"
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
// Close or Abort.
// Large unmarked FPDUs go out with writev, without copying the payload.
// It blocks while TCP applies flow control and allocates nothing.
func (c *Conn) SendSegment(hdr, payload []byte) error {
	n := len(hdr) + len(payload)
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
	c.txMu.Lock()
	defer c.txMu.Unlock()
	if c.txClosed {
		return c.stateErr()
	}
	var wire int
	var err error
	if c.params.MarkersTx || n < gatherThreshold {
		c.txBuf, _ = appendFPDU(c.txBuf[:0], c.txPos, c.params.MarkersTx, c.params.CRC, hdr, payload)
		wire = len(c.txBuf)
		_, err = c.nc.Write(c.txBuf)
	} else {
		wire, err = c.writeGather(hdr, payload)
	}
	if err != nil {
		return c.ioError("send", err)
	}
	c.txPos += uint64(wire)
	c.sentSegs.Add(1)
	c.sentBytes.Add(uint64(n))
	if c.sendCount++; c.sendCount%mssRefreshEvery == 0 {
		c.refreshMULPDU()
	}
	return nil
}

// BuffersWriter is implemented by a net.Conn that wraps a TCP connection
// (a recorder, package capture) and can still send several buffers with
// one writev: net.Buffers.WriteTo uses writev only on the net package's
// own conns, so without it a wrapped conn would take one write per piece
// of each FPDU.
type BuffersWriter interface {
	WriteBuffers(b *net.Buffers) (int64, error)
}

// writeGather sends an unmarked FPDU as ULPDU_Length, hdr, payload and
// pad+CRC with one writev (net.Buffers), computing the CRC over the pieces
// without copying them.
func (c *Conn) writeGather(hdr, payload []byte) (int, error) {
	ulen := len(hdr) + len(payload)
	pad := PadLen(ulen)
	binary.BigEndian.PutUint16(c.lenWord[:], uint16(ulen))
	c.trailer = [len(c.trailer)]byte{}
	var crc uint32
	if c.params.CRC {
		crc = UpdateCRC32c(0, c.lenWord[:])
		crc = UpdateCRC32c(crc, hdr)
		crc = UpdateCRC32c(crc, payload)
		crc = UpdateCRC32c(crc, c.trailer[:pad])
	}
	binary.LittleEndian.PutUint32(c.trailer[pad:], crc) // RFC 5044 §4.4, LSB first
	c.iov = [4][]byte{c.lenWord[:], hdr, payload, c.trailer[:pad+CRCLen]}
	c.bufs = c.iov[:]
	wire := FPDUHeaderLen + ulen + pad + CRCLen
	var err error
	if bw, ok := c.nc.(BuffersWriter); ok {
		_, err = bw.WriteBuffers(&c.bufs)
	} else {
		_, err = c.bufs.WriteTo(c.nc)
	}
	c.iov = [4][]byte{} // do not retain the caller's slices
	c.bufs = nil
	return wire, err
}
