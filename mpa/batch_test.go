package mpa

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/llp"
)

// countingConn counts the write system calls made on a TCP connection:
// single writes and writevs (BuffersWriter).
type countingConn struct {
	net.Conn
	writes, writevs atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

func (c *countingConn) WriteBuffers(b *net.Buffers) (int64, error) {
	c.writevs.Add(1)
	return b.WriteTo(c.Conn)
}

// CloseWrite and SetLinger reach the TCP connection (Close's FIN,
// Abort's reset).
func (c *countingConn) CloseWrite() error     { return c.Conn.(*net.TCPConn).CloseWrite() }
func (c *countingConn) SetLinger(s int) error { return c.Conn.(*net.TCPConn).SetLinger(s) }

// batchPair is pair with the Initiator's writes counted and both ends
// started.
func batchPair(t *testing.T, cfg *Config) (cli *Conn, cc *countingConn, sr *recorder) {
	cli, srv := pair(t, cfg, cfg)
	cc = &countingConn{Conn: cli.nc}
	cli.nc = cc
	sr = newRecorder()
	srv.Start(sr)
	cli.Start(newRecorder())
	return cli, cc, sr
}

// segments returns n random segments of up to max octets each.
func segments(n, max int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, 1+rng.IntN(max))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		out[i] = b
	}
	return out
}

// The FPDUs of one message (SendSegmentMore for all but the last, as the
// DDP sender does) leave in one writev and arrive intact and in order,
// with and without CRC (llp.Batcher; RFC 5044 §3: one ULPDU per FPDU).
func TestBatchOneWritevPerMessage(t *testing.T) {
	for _, crc := range []bool{true, false} {
		t.Run(fmt.Sprintf("crc=%t", crc), func(t *testing.T) {
			cli, cc, sr := batchPair(t, &Config{NoCRC: !crc})
			require.Equal(t, crc, cli.Params().CRC)
			segs := segments(45, 1400, 1) // a 64 KiB message at MTU 1500
			for i, s := range segs {
				h := min(len(s), 14)
				if i < len(segs)-1 {
					require.NoError(t, cli.SendSegmentMore(s[:h], s[h:]))
				} else {
					require.NoError(t, cli.SendSegment(s[:h], s[h:]))
				}
			}
			for i, s := range segs {
				require.True(t, bytes.Equal(s, sr.next(t)), "segment %d", i)
			}
			assert.Equal(t, int64(1), cc.writevs.Load(), "one writev for the message")
			assert.Zero(t, cc.writes.Load())
			assert.Equal(t, uint64(len(segs)), cli.Info().SegmentsSent)
		})
	}
}

// A message of more FPDUs than a batch holds goes out in several
// writevs, each full, and arrives intact.
func TestBatchFullBatches(t *testing.T) {
	cli, cc, sr := batchPair(t, &Config{})
	segs := segments(2*maxBatchFPDUs+5, 1000, 2)
	for i, s := range segs {
		if i < len(segs)-1 {
			require.NoError(t, cli.SendSegmentMore(s[:1], s[1:]))
		} else {
			require.NoError(t, cli.SendSegment(s[:1], s[1:]))
		}
	}
	for i, s := range segs {
		require.True(t, bytes.Equal(s, sr.next(t)), "segment %d", i)
	}
	assert.Equal(t, int64(3), cc.writevs.Load())
}

// Close sends what SendSegmentMore held (llp.Stream.Close: every segment
// passed goes first), then the FIN.
func TestBatchCloseSendsHeld(t *testing.T) {
	cli, _, sr := batchPair(t, &Config{})
	segs := segments(5, 500, 3)
	for _, s := range segs {
		require.NoError(t, cli.SendSegmentMore(nil, s))
	}
	require.NoError(t, cli.Close())
	for i, s := range segs {
		require.True(t, bytes.Equal(s, sr.next(t)), "segment %d", i)
	}
	require.NoError(t, sr.end(t))
	require.ErrorIs(t, cli.SendSegmentMore(nil, []byte("x")), llp.ErrClosed)
}

// Flush sends what SendSegmentMore held, in one writev, without a
// SendSegment behind it (llp.Batcher.Flush: RDMAP's Read Requests posted
// together, the last of which turned out to have nothing after it); with
// nothing held it writes nothing.
func TestBatchFlush(t *testing.T) {
	cli, cc, sr := batchPair(t, &Config{})
	require.NoError(t, cli.Flush())
	assert.Zero(t, cc.writevs.Load()+cc.writes.Load(), "nothing held, nothing written")
	segs := segments(4, 40, 4)
	for _, s := range segs {
		require.NoError(t, cli.SendSegmentMore(s[:1], s[1:]))
	}
	assert.Zero(t, cc.writevs.Load(), "held")
	require.NoError(t, cli.Flush())
	for i, s := range segs {
		require.True(t, bytes.Equal(s, sr.next(t)), "segment %d", i)
	}
	assert.Equal(t, int64(1), cc.writevs.Load())
	require.NoError(t, cli.Abort())
	require.ErrorIs(t, cli.SendSegmentMore(nil, []byte("x")), llp.ErrAborted)
	require.NoError(t, cli.Flush(), "nothing held after Abort")
}

// Abort discards what is held; later segments fail at once.
func TestBatchAbortDiscards(t *testing.T) {
	cli, cc, _ := batchPair(t, &Config{})
	require.NoError(t, cli.SendSegmentMore(nil, []byte("held")))
	require.NoError(t, cli.Abort())
	assert.Zero(t, cli.batch.segs)
	assert.Nil(t, cli.batch.bufs[:cap(cli.batch.bufs)][0], "the caller's payload is not kept")
	require.ErrorIs(t, cli.SendSegmentMore(nil, []byte("x")), llp.ErrAborted)
	assert.Zero(t, cc.writevs.Load())
}

// With Markers (RFC 5044 §4.3) every FPDU is placed by stream position
// as it is sent: SendSegmentMore is SendSegment.
func TestBatchMarkersUnbatched(t *testing.T) {
	cli, cc, sr := batchPair(t, &Config{Markers: true})
	require.True(t, cli.Params().MarkersTx)
	segs := segments(10, 1500, 4)
	for _, s := range segs {
		require.NoError(t, cli.SendSegmentMore(s[:1], s[1:]))
	}
	for i, s := range segs {
		require.True(t, bytes.Equal(s, sr.next(t)), "segment %d", i)
	}
	assert.Equal(t, int64(len(segs)), cc.writes.Load()+cc.writevs.Load())
}

// A segment over MULPDU is refused by SendSegmentMore as by SendSegment.
func TestBatchTooLarge(t *testing.T) {
	cli, _, _ := batchPair(t, &Config{})
	err := cli.SendSegmentMore(nil, make([]byte, cli.MULPDU()+1))
	require.ErrorIs(t, err, llp.ErrSegmentTooLarge)
}

// writeCounter is a connection without writev (like a TLS connection,
// whose every Write is a record): it counts the Writes.
type writeCounter struct {
	net.Conn
	writes atomic.Int64
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// Over a connection without writev (TLS), a batch, and an FPDU sent by
// itself, is one Write: not one per piece, each of which TLS would make a
// record of its own (MPA over TLS went from 3.5-4.3 to 0.8-0.95 Gbit/s
// when batches were written piece by piece).
func TestBatchOneWriteWithoutWritev(t *testing.T) {
	cli, srv := pair(t, &Config{}, &Config{})
	wc := &writeCounter{Conn: cli.nc}
	cli.nc = wc
	sr := newRecorder()
	srv.Start(sr)
	cli.Start(newRecorder())
	segs := segments(20, 3000, 5)
	for i, s := range segs {
		if i < len(segs)-1 {
			require.NoError(t, cli.SendSegmentMore(s[:1], s[1:]))
		} else {
			require.NoError(t, cli.SendSegment(s[:1], s[1:]))
		}
	}
	big := segments(1, 60000, 6)[0]
	require.NoError(t, cli.SendSegment(big[:14], big[14:]))
	for i, s := range append(segs, big) {
		require.True(t, bytes.Equal(s, sr.next(t)), "segment %d", i)
	}
	assert.Equal(t, int64(2), wc.writes.Load(), "one Write for the batch, one for the large FPDU")
}
