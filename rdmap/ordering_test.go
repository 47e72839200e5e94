package rdmap

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// orderedPair has a readable region at B and a sink at A.
func orderedPair(t *testing.T, cfgA, cfgB EndpointConfig, extra ...func(p *pair)) (p *pair, src, sink, tgt *MR) {
	srcBuf := make([]byte, 1<<20)
	for i := range srcBuf {
		srcBuf[i] = byte(i * 7)
	}
	p = newPair(t, cfgA, cfgB, append([]func(*pair){func(p *pair) {
		var err error
		src, err = p.pdB.Register(srcBuf, RemoteRead|RemoteWrite|RemoteAtomic)
		require.NoError(t, err)
		sink, err = p.pdA.Register(make([]byte, 1<<20), LocalWrite)
		require.NoError(t, err)
		tgt, err = p.pdB.Register(make([]byte, 1<<16), RemoteWrite)
		require.NoError(t, err)
	}}, extra...)...)
	return
}

// RFC 5040 §5.5 rule 10 (and RFC 7306 §6.4 for Immediate Data): Sends are
// delivered at the remote peer in the order they were sent.
func TestOrdering_RFC5040_5_5_Rule10_SendsInOrder(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	for i := range 50 {
		require.NoError(t, p.b.PostRecv(uint64(i), make([]byte, 8)))
	}
	for i := range 50 {
		if i%5 == 4 {
			require.NoError(t, p.a.postSend1(SendWR{Op: WRImmediate, Imm: uint64(i)}))
			continue
		}
		require.NoError(t, p.a.postSend1(SendWR{Op: WRSend, Local: binary.BigEndian.AppendUint64(nil, uint64(i))}))
	}
	for i := range 50 {
		c := poll(t, p.rcqB)
		require.Equal(t, uint64(i), c.WRID)
		if c.HasImm {
			assert.Equal(t, uint64(i), c.Imm)
		}
	}
}

// RFC 5040 §5.5 rules 11, 19 and 20, §11.2 "RDMA Read / RDMA Read": Read
// Responses are generated in request order and each Read completes only
// once its response was delivered, with the data in the sink.
func TestOrdering_RFC5040_5_5_Rule11_19_20_ReadResponsesInOrder(t *testing.T) {
	p, src, sink, _ := orderedPair(t, EndpointConfig{ORD: 8}, EndpointConfig{IRD: 8})
	var mu sync.Mutex
	var respTOs []uint64
	p.pipeB.SetTap(func(seg []byte) {
		if seg[0]&0x80 != 0 && seg[1] == iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadResponse) {
			to := binary.BigEndian.Uint64(seg[6:14])
			mu.Lock()
			if len(respTOs) == 0 || to < respTOs[len(respTOs)-1] || to-respTOs[len(respTOs)-1] >= 4096 {
				respTOs = append(respTOs, to) // first segment of each response
			}
			mu.Unlock()
		}
	})
	for i := range 16 {
		require.NoError(t, p.a.postSend1(SendWR{ID: uint64(i), Op: WRRead, Sink: sink, SinkOffset: uint64(i) * 4096,
			Length: 4096, RemoteSTag: src.STag(), RemoteTO: uint64(i) * 4096}))
	}
	for i := range 16 {
		c := poll(t, p.cqA)
		require.Equal(t, uint64(i), c.WRID)
		assert.Equal(t, src.Bytes()[i*4096:(i+1)*4096], sink.Bytes()[i*4096:(i+1)*4096], "rule 19: data there at completion")
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range respTOs {
		assert.Equal(t, uint64(i)*4096, respTOs[i], "rule 20: responses in request order")
	}
}

// RFC 5040 §5.5 rules 12 and 17, §11.2 "RDMA Write / RDMA Read": a Read
// issued after a Write to the same buffer returns the written data.
func TestOrdering_RFC5040_5_5_Rule12_ReadAfterWrite(t *testing.T) {
	p, src, sink, _ := orderedPair(t, EndpointConfig{}, EndpointConfig{})
	data := bytes.Repeat([]byte("rule12"), 1000)
	require.NoError(t, p.a.postSend1(SendWR{ID: 1, Op: WRWrite, Local: data, RemoteSTag: src.STag(), RemoteTO: 100}))
	require.NoError(t, p.a.postSend1(SendWR{ID: 2, Op: WRRead, Sink: sink, Length: uint32(len(data)), RemoteSTag: src.STag(), RemoteTO: 100}))
	poll(t, p.cqA)
	require.NoError(t, poll(t, p.cqA).Err)
	assert.Equal(t, data, sink.Bytes()[:len(data)])
}

// RFC 5040 §5.5 rules 13 and 14: messages reach DDP in submission order,
// and a Send or Write completes only after DDP has taken all of it.
func TestOrdering_RFC5040_5_5_Rule13_14_SubmissionOrder(t *testing.T) {
	p, src, sink, tgt := orderedPair(t, EndpointConfig{}, EndpointConfig{})
	var mu sync.Mutex
	var opsOnWire []opcode
	lastSegs := 0
	p.pipeA.SetTap(func(seg []byte) {
		mu.Lock()
		defer mu.Unlock()
		if seg[0]&0x40 != 0 { // L bit: one message done
			opsOnWire = append(opsOnWire, opcode(seg[1]&0x0f))
			lastSegs++
		}
	})
	for i := range 10 {
		require.NoError(t, p.b.PostRecv(uint64(i), make([]byte, 1<<16)))
	}
	want := []opcode{}
	for i := range 30 {
		var wr SendWR
		switch i % 3 {
		case 0:
			wr = SendWR{Op: WRWrite, Local: make([]byte, 5000), RemoteSTag: tgt.STag()}
			want = append(want, iwarp.RDMAPOpWrite)
		case 1:
			wr = SendWR{Op: WRRead, Sink: sink, Length: 10, RemoteSTag: src.STag()}
			want = append(want, iwarp.RDMAPOpReadRequest)
		case 2:
			wr = SendWR{Op: WRSend, Local: make([]byte, 3000)}
			want = append(want, iwarp.RDMAPOpSend)
		}
		wr.ID = uint64(i)
		require.NoError(t, p.a.postSend1(wr))
	}
	for i := range 30 {
		c := poll(t, p.cqA)
		require.Equal(t, uint64(i), c.WRID)
		mu.Lock()
		assert.GreaterOrEqual(t, lastSegs, i+1, "rule 14: completed after its last segment left")
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, want, opsOnWire)
}

// RFC 5040 §11.2 "Send / RDMA Read": the Read Response is not generated
// until the earlier Send has been completed at the remote peer.
func TestOrdering_RFC5040_11_2_SendThenRead(t *testing.T) {
	p, src, sink, _ := orderedPair(t, EndpointConfig{}, EndpointConfig{})
	sendDone := make(chan bool, 1)
	var once sync.Once
	p.pipeB.SetTap(func(seg []byte) {
		if seg[0]&0x80 != 0 && seg[1] == iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadResponse) {
			once.Do(func() { sendDone <- p.rcqB.queued() == 1 })
		}
	})
	require.NoError(t, p.b.PostRecv(0, make([]byte, 16)))
	require.NoError(t, p.a.postSend1(SendWR{Op: WRSend, Local: []byte("first")}))
	require.NoError(t, p.a.postSend1(SendWR{Op: WRRead, Sink: sink, Length: 64, RemoteSTag: src.STag()}))
	poll(t, p.cqA)
	poll(t, p.cqA)
	assert.True(t, <-sendDone)
}

// RFC 7306 §7 "Atomic / Atomic" and "Atomic / RDMA Read": atomics are
// executed and answered in order; a Read after an Atomic sees its result.
func TestOrdering_RFC7306_7_AtomicsInOrder(t *testing.T) {
	p, src, sink, _ := orderedPair(t, EndpointConfig{ORD: 8}, EndpointConfig{IRD: 8})
	binary.NativeEndian.PutUint64(src.Bytes()[0:8], 0)
	for i := range 20 {
		require.NoError(t, p.a.postSend1(SendWR{ID: uint64(i), Op: WRFetchAdd, RemoteSTag: src.STag(), Add: 1}))
	}
	require.NoError(t, p.a.postSend1(SendWR{ID: 20, Op: WRRead, Sink: sink, Length: 8, RemoteSTag: src.STag()}))
	for i := range 20 {
		c := poll(t, p.cqA)
		require.Equal(t, uint64(i), c.WRID)
		assert.Equal(t, uint64(i), c.Orig, "executed in request order")
	}
	require.NoError(t, poll(t, p.cqA).Err)
	assert.Equal(t, uint64(20), binary.NativeEndian.Uint64(sink.Bytes()[:8]))
}

// TestInlineIssue: a small Send posted to an idle send queue is handed to
// DDP by the posting goroutine, so its completion (RFC 5040 §5.5 rule 14:
// complete once DDP has it) is in the CQ when PostSend returns; requests
// posted meanwhile from other goroutines still reach the peer once each,
// in the order each goroutine posted them (rule 13), with a Send larger
// than the inline limit among them going through the transmit loop, and
// the unsignaled ones among them through issueQuickLocked when they find
// the endpoint idle.
func TestInlineIssue(t *testing.T) {
	p := newPair(t, EndpointConfig{SQDepth: 1024}, EndpointConfig{RQDepth: 1024})
	defer p.close(t)
	bufs := make([][]byte, 300)
	for i := range bufs {
		bufs[i] = make([]byte, 8192)
		require.NoError(t, p.b.PostRecv(uint64(i), bufs[i]))
	}
	payload := func(c Completion) []byte { return bufs[c.WRID][:c.Length] }
	// The send queue is idle once the start is over (the transmit loop
	// may still be sending the RTR of the start on a loaded host).
	waitIdleTx(t, p.a)
	require.NoError(t, p.a.postSend1(SendWR{ID: 1, Op: WRSend, Local: []byte("inline")}))
	c, ok := p.cqA.tryPoll()
	require.True(t, ok, "the completion is there when PostSend returns")
	assert.Equal(t, uint64(1), c.WRID)
	assert.Equal(t, "inline", string(payload(poll(t, p.rcqB))))

	const writers, each = 3, 90
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				msg := []byte{byte(w), byte(i)}
				if i%30 == 29 {
					msg = append(msg, make([]byte, inlineIssueMax+1)...) // through the loop
				}
				// Two in three unsignaled: posted to an idle endpoint,
				// those are issued without queueing (issueQuickLocked).
				assert.NoError(t, p.a.postSend1(SendWR{ID: uint64(w<<16 | i), Op: WRSend, Local: msg, Unsignaled: i%3 != 0}))
			}
		}()
	}
	wg.Wait()
	next := make([]int, writers)
	for range writers * each {
		c := poll(t, p.rcqB)
		require.NoError(t, c.Err)
		b := payload(c)
		w, i := int(b[0]), int(b[1])
		assert.Equal(t, next[w], i, "writer %d's Sends arrive in its order", w)
		next[w] = i + 1
	}
	// Only the signaled ones complete (rule 15: in each writer's order).
	last := []int{-1, -1, -1}
	for range writers * each / 3 {
		c := poll(t, p.cqA)
		require.NoError(t, c.Err)
		w, i := int(c.WRID>>16), int(c.WRID&0xffff)
		assert.Zero(t, i%3, "only signaled requests complete")
		assert.Greater(t, i, last[w], "writer %d's completions in its order", w)
		last[w] = i
	}
	_, ok = p.cqA.tryPoll()
	assert.False(t, ok)
}
