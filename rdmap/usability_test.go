package rdmap

import (
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// TestRFC7306_5_1_UnalignedAtomicIsLocalError: an atomic whose remote TO
// is not a multiple of 8 (RFC 7306 §5.1: atomics target a 64-bit aligned
// address) is refused when posted, with ErrUnaligned, and nothing reaches
// the wire; the endpoint keeps running.
func TestRFC7306_5_1_UnalignedAtomicIsLocalError(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	tgt, err := p.pdB.Register(make([]byte, 64), RemoteAtomic)
	require.NoError(t, err)
	var sent atomic.Int64
	p.pipeA.SetTap(func([]byte) { sent.Add(1) })
	for _, to := range []uint64{1, 4, 7, 12} {
		_, err := p.a.fetchAdd(ctx5(t), tgt.STag(), to, 1, 0)
		require.ErrorIs(t, err, errUnaligned, "FetchAdd at %d", to)
		require.ErrorIs(t, err, ErrInvalidWR)
		assert.Contains(t, err.Error(), "multiple of 8")
		_, err = p.a.cmpSwap(ctx5(t), tgt.STag(), to, 0, 0, 1, ^uint64(0))
		require.ErrorIs(t, err, errUnaligned, "CmpSwap at %d", to)
		require.ErrorIs(t, p.a.postSend1(SendWR{Op: WRFetchAdd, RemoteSTag: tgt.STag(), RemoteTO: to}), errUnaligned)
	}
	assert.Zero(t, sent.Load(), "nothing was sent")
	orig, err := p.a.fetchAdd(ctx5(t), tgt.STag(), 8, 1, 0)
	require.NoError(t, err, "the endpoint still runs")
	assert.Zero(t, orig)
}

// TestRFC7306_5_1_1_AtomicByteOrder: the operands and the result are
// plain values; the target's word is in host byte order, which
// MR.PutUint64 and MR.Uint64 use, so 100 stored with PutUint64 is 100 for
// FetchAdd.
func TestRFC7306_5_1_1_AtomicByteOrder(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	tgt, err := p.pdB.Register(make([]byte, 64), RemoteAtomic, MROption{BaseTO: 0x1000})
	require.NoError(t, err)
	require.NoError(t, tgt.PutUint64(0x1008, 100))
	assert.Equal(t, uint64(100), binary.NativeEndian.Uint64(tgt.Bytes()[8:]))
	orig, err := p.a.fetchAdd(ctx5(t), tgt.STag(), 0x1008, 5, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(100), orig)
	v, err := tgt.Uint64(0x1008)
	require.NoError(t, err)
	assert.Equal(t, uint64(105), v)
	orig, err = p.a.cmpSwap(ctx5(t), tgt.STag(), 0x1008, 105, ^uint64(0), 7, ^uint64(0))
	require.NoError(t, err)
	assert.Equal(t, uint64(105), orig)
	v, _ = tgt.Uint64(0x1008)
	assert.Equal(t, uint64(7), v)

	_, err = tgt.Uint64(0x1000 + 60)
	require.ErrorIs(t, err, errAccess, "8 octets past the end")
	require.ErrorIs(t, tgt.PutUint64(0x0FF8, 1), errAccess, "before the base TO")
}

// TestReceiveCompletionReturnsItsBuffer: a receive completion carries the
// Posted buffer, for a Send, an Immediate Data message and a flush, so the
// buffer can be posted again from the completion alone.
func TestReceiveCompletionReturnsItsBuffer(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	b1, b2, b3 := make([]byte, 32), make([]byte, 16), make([]byte, 8)
	require.NoError(t, p.b.PostRecv(1, b1))
	require.NoError(t, p.b.PostRecv(2, b2))
	require.NoError(t, p.b.PostRecv(3, b3))
	require.NoError(t, p.a.send(ctx5(t), []byte("hello")))
	c, err := p.rcqB.Poll(ctx5(t))
	require.NoError(t, err)
	require.NoError(t, c.Err)
	assert.Equal(t, WRRecv, c.Op)
	assert.Same(t, &b1[0], &c.Buf[0])
	assert.Len(t, c.Buf, 32)
	assert.Equal(t, "hello", string(c.Buf[:c.Length]))

	require.NoError(t, p.a.immediate(ctx5(t), 9, false))
	c, err = p.rcqB.Poll(ctx5(t))
	require.NoError(t, err)
	assert.Equal(t, wrRecvImm, c.Op)
	assert.Same(t, &b2[0], &c.Buf[0])
	assert.Empty(t, c.Buf[:c.Length])

	require.NoError(t, p.b.Abort())
	c, err = p.rcqB.Poll(ctx5(t))
	require.NoError(t, err)
	assert.ErrorIs(t, c.Err, ErrFlushed)
	assert.Same(t, &b3[0], &c.Buf[0], "a flushed receive gives its buffer back too")
}

// TestEndpointConfig_ReportsWhatIsInEffect: Config is the query of an
// endpoint (ibv_query_qp): the defaults filled in, the private CQs it
// made, and a limit of none as -1, the value EndpointConfig takes for it.
func TestEndpointConfig_ReportsWhatIsInEffect(t *testing.T) {
	p := newPair(t, EndpointConfig{ORD: -1, SQDepth: 8}, EndpointConfig{})
	a, b := p.a.Config(), p.b.Config()
	assert.Equal(t, -1, a.ORD, "none")
	assert.Equal(t, iwarp.DefaultIRD, a.IRD)
	assert.Equal(t, 8, a.SQDepth)
	assert.Equal(t, defaultRQDepth, a.RQDepth)
	assert.Same(t, p.a.sendCQ, a.SendCQ)
	assert.Same(t, p.a.recvCQ, a.RecvCQ)
	assert.NotSame(t, a.SendCQ, b.SendCQ, "private CQs")
	assert.Equal(t, iwarp.DefaultORD, b.ORD)
}

// TestPostSend_List: PostSend posts one or a list and says how many;
// none is nothing.
func TestPostSend_List(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	n, err := p.a.PostSend()
	require.NoError(t, err)
	assert.Zero(t, n)
	tgt, err := p.pdB.Register(make([]byte, 16), RemoteWrite)
	require.NoError(t, err)
	n, err = p.a.PostSend(
		SendWR{ID: 1, Op: WRWrite, Local: []byte("ab"), RemoteSTag: tgt.STag()},
		SendWR{ID: 2, Op: WRWrite, Local: []byte("cd"), RemoteSTag: tgt.STag(), RemoteTO: 2},
		SendWR{ID: 3, Op: WorkType(99)},
	)
	require.ErrorIs(t, err, ErrInvalidWR)
	assert.Zero(t, n, "a list is checked before anything is posted")
	n, err = p.a.PostSend(
		SendWR{ID: 1, Op: WRWrite, Local: []byte("ab"), RemoteSTag: tgt.STag()},
		SendWR{ID: 2, Op: WRWrite, Local: []byte("cd"), RemoteSTag: tgt.STag(), RemoteTO: 2},
	)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	for _, id := range []uint64{1, 2} {
		c, err := p.cqA.Poll(ctx5(t))
		require.NoError(t, err)
		require.NoError(t, c.Err)
		assert.Equal(t, id, c.WRID)
	}
}
