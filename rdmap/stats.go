package rdmap

import (
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// Stats are an endpoint's counters since it was created. The data path
// keeps them with atomic additions only (no lock, no allocation); Stats
// reads them one by one, so a snapshot taken while traffic flows may mix
// instants by a few messages.
type Stats struct {
	// Sent counts the RDMA Messages handed to DDP, by opcode (index with
	// an opcode; RFC 5040 §4.3, RFC 7306 §4.1): Sends and Writes as their
	// work requests are issued, Read and Atomic Responses as they are
	// answered, the Terminate as it goes out. RTR messages of RFC 6581
	// §9.2 are not RDMAP operations and are not counted.
	Sent [iwarpwire.RDMAPNumOpcodes]uint64
	// Received counts the complete RDMA Messages DDP delivered, by opcode,
	// counted before they are processed (a completion is never ahead of
	// its count). A segment DDP refused (RFC 5041 §7.2: an invalid STag, a
	// bounds violation) never became a message and is not counted.
	Received [iwarpwire.RDMAPNumOpcodes]uint64
	// OctetsSent counts the ULP payload octets handed to DDP: the data of
	// Sends, Writes and Read Responses (Request, Immediate Data, Atomic and
	// Terminate messages carry no user data).
	OctetsSent uint64
	// OctetsPlaced counts the octets of the received Writes, Read
	// Responses and Sends, placed into local buffers (RFC 5040 §5.1-§5.3):
	// what a passive peer of a one-sided test can see of it.
	OctetsPlaced uint64
	// TerminateSent and TerminateReceived hold the layer/type/code of the
	// Terminate this endpoint sent or received (RFC 5040 §4.8), when
	// HasTerminateSent or HasTerminateReceived.
	TerminateSent, TerminateReceived       iwarp.TermCode
	HasTerminateSent, HasTerminateReceived bool
}

// epCounters are the atomics behind Stats.
type epCounters struct {
	sent, recv           [iwarpwire.RDMAPNumOpcodes]atomic.Uint64
	octetsSent, octetsIn atomic.Uint64
	termSent, termRecv   atomic.Uint32 // 1<<24 | layer<<16 | type<<8 | code once set
}

func packTerm(c iwarp.TermCode) uint32 {
	return 1<<24 | iwarpwire.PackTermCode(c)
}

func unpackTerm(v uint32) (iwarp.TermCode, bool) {
	return iwarpwire.UnpackTermCode(v), v != 0
}

// countSent records one message of op with n payload octets.
func (c *epCounters) countSent(op opcode, n int) {
	if n > 0 {
		c.octetsSent.Add(uint64(n)) // before the count: whoever sees the count sees the octets
	}
	c.sent[op&0xf].Add(1)
}

// countRecv records one accepted message of op that placed n octets.
func (c *epCounters) countRecv(op opcode, n int) {
	if n > 0 {
		c.octetsIn.Add(uint64(n)) // before the count, as in countSent
	}
	c.recv[op&0xf].Add(1)
}

// counters returns the endpoint's counters, making them on first use.
func (e *Endpoint) counters() *epCounters {
	if c := e.ctr.Load(); c != nil {
		return c
	}
	c := new(epCounters)
	if e.ctr.CompareAndSwap(nil, c) {
		return c
	}
	return e.ctr.Load()
}

// Stats returns the endpoint's counters.
func (e *Endpoint) Stats() Stats {
	var s Stats
	c := e.ctr.Load()
	if c == nil {
		return s // nothing sent or received yet
	}
	for i := range s.Sent {
		s.Sent[i] = c.sent[i].Load()
		s.Received[i] = c.recv[i].Load()
	}
	s.OctetsSent, s.OctetsPlaced = c.octetsSent.Load(), c.octetsIn.Load()
	s.TerminateSent, s.HasTerminateSent = unpackTerm(c.termSent.Load())
	s.TerminateReceived, s.HasTerminateReceived = unpackTerm(c.termRecv.Load())
	return s
}
