package rdmap

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// TestEndpointStats_CountsEveryOpcode_RFC5040_4_3 checks the counters of
// both ends after one message of each kind: what the active side sent is
// what the passive side received, and the passive side sees the octets
// placed by one-sided operations (RFC 5040 §5.1, §5.2) it never completes.
func TestEndpointStats_CountsEveryOpcode_RFC5040_4_3(t *testing.T) {
	var tgt, sink, inv, inv2 *MR
	tbuf := make([]byte, 4096)
	sbuf := make([]byte, 4096)
	p := newPair(t, EndpointConfig{}, EndpointConfig{}, func(p *pair) {
		var err error
		tgt, err = p.pdB.Register(tbuf, RemoteWrite|RemoteRead|RemoteAtomic)
		require.NoError(t, err)
		inv, err = p.pdB.Register(make([]byte, 8), RemoteWrite, MROption{Endpoint: p.b}, MROption{RemoteInvalidate: true})
		require.NoError(t, err)
		inv2, err = p.pdB.Register(make([]byte, 8), RemoteWrite, MROption{Endpoint: p.b}, MROption{RemoteInvalidate: true})
		require.NoError(t, err)
		sink, err = p.pdA.Register(sbuf, LocalWrite)
		require.NoError(t, err)
	})
	ctx := ctx5(t)
	for i := range 6 {
		require.NoError(t, p.b.PostRecv(uint64(i), make([]byte, 64)))
	}
	require.NoError(t, p.a.write(ctx, make([]byte, 1000), tgt.STag(), 0))
	require.NoError(t, p.a.read(ctx, sink, 0, 300, tgt.STag(), 0))
	binary.NativeEndian.PutUint64(tbuf[64:], 1)
	_, err := p.a.fetchAdd(ctx, tgt.STag(), 64, 1, 0)
	require.NoError(t, err)
	require.NoError(t, p.a.send(ctx, make([]byte, 10)))
	require.NoError(t, p.a.postSend1(SendWR{ID: 1, Op: WRSend, Solicited: true, Local: make([]byte, 20)}))
	require.NoError(t, p.a.postSend1(SendWR{ID: 2, Op: WRSend, Invalidate: true, Local: make([]byte, 30), InvalidateSTag: inv.STag()}))
	require.NoError(t, p.a.postSend1(SendWR{ID: 3, Op: WRSend, Solicited: true, Invalidate: true, Local: make([]byte, 40), InvalidateSTag: inv2.STag()}))
	require.NoError(t, p.a.writeImm(ctx, make([]byte, 5), tgt.STag(), 2000, 7, false))
	for range 3 {
		c := poll(t, p.cqA)
		require.NoError(t, c.Err)
	}
	require.NoError(t, p.b.Err())
	require.NoError(t, p.a.immediate(ctx, 8, true))
	for range 6 {
		poll(t, p.rcqB)
	}

	want := map[opcode]uint64{iwarp.RDMAPOpWrite: 2, iwarp.RDMAPOpReadRequest: 1, iwarp.RDMAPOpSend: 1, iwarp.RDMAPOpSendSE: 1, iwarp.RDMAPOpSendInvalidate: 1,
		iwarp.RDMAPOpSendSEInvalidate: 1, iwarp.RDMAPOpImmediate: 1, iwarp.RDMAPOpImmediateSE: 1, iwarp.RDMAPOpAtomicRequest: 1}
	back := map[opcode]uint64{iwarp.RDMAPOpReadResponse: 1, iwarp.RDMAPOpAtomicResponse: 1}
	// The responder counts a response once DDP has taken it, which can be
	// after the requester has placed it and completed its work request.
	require.Eventually(t, func() bool {
		st := p.b.Stats()
		return st.Sent[iwarp.RDMAPOpReadResponse] == 1 && st.Sent[iwarp.RDMAPOpAtomicResponse] == 1
	}, 5*time.Second, time.Millisecond)
	a, b := p.a.Stats(), p.b.Stats()
	for op := range opcode(iwarpwire.RDMAPNumOpcodes) {
		assert.Equal(t, want[op], a.Sent[op], "active sent %v", op)
		assert.Equal(t, want[op], b.Received[op], "passive received %v", op)
		assert.Equal(t, back[op], b.Sent[op], "passive sent %v", op)
		assert.Equal(t, back[op], a.Received[op], "active received %v", op)
	}
	// Write 1000 + 5, Sends 10+20+30+40; the Read Response's 300.
	assert.Equal(t, uint64(1000+5+10+20+30+40), a.OctetsSent)
	assert.Equal(t, uint64(1000+5+10+20+30+40), b.OctetsPlaced)
	assert.Equal(t, uint64(300), b.OctetsSent)
	assert.Equal(t, uint64(300), a.OctetsPlaced)
	assert.False(t, a.HasTerminateSent || a.HasTerminateReceived || b.HasTerminateSent || b.HasTerminateReceived)

	// A Write to an STag invalidated above: the passive side sends the
	// Terminate (RFC 5041 §7.2 Invalid STag), the active side receives it.
	require.NoError(t, p.a.postSend1(SendWR{ID: 4, Op: WRWrite, Local: make([]byte, 8), RemoteSTag: inv.STag()}))
	<-p.a.Done()
	var te *TerminateError
	require.True(t, errors.As(p.a.Err(), &te), "%v", p.a.Err())
	require.Eventually(t, func() bool { return p.b.Stats().HasTerminateSent }, 10*time.Second, 5*time.Millisecond)
	a, b = p.a.Stats(), p.b.Stats()
	assert.True(t, a.HasTerminateReceived)
	assert.Equal(t, te.Code, a.TerminateReceived)
	assert.Equal(t, te.Code, b.TerminateSent)
	assert.Equal(t, uint64(1), b.Sent[iwarp.RDMAPOpTerminate])
	assert.Equal(t, uint64(1), a.Received[iwarp.RDMAPOpTerminate])
	assert.Equal(t, uint64(2), b.Received[iwarp.RDMAPOpWrite], "DDP refused the faulty Write (RFC 5041 §7.2): it never became a message")
}

// TestEndpointStats_NoAllocation: counting adds no allocation to a
// message (the data path allocates nothing for its counters).
func TestEndpointStats_NoAllocation(t *testing.T) {
	var c epCounters
	allocs := testing.AllocsPerRun(1000, func() {
		c.countSent(iwarp.RDMAPOpWrite, 100)
		c.countRecv(iwarp.RDMAPOpSend, 100)
	})
	assert.Zero(t, allocs)
}
