package ddp

import (
	"errors"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"math"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// errTestULP is the error the test ULP returns from its own checks.
var errTestULP = errors.New("test ULP refuses")

// region is registered memory of the test ULP: an STag's buffer and the
// stream it is bound to (RFC 5041 §8.2).
type region struct {
	buf    []byte
	stream int
}

// testULP is a ddp.ULP with a real STag→buffer table and bounds checks
// (RFC 5041 §7.1 tagged checks 1-5), recording everything it is told.
type testULP struct {
	mu      sync.Mutex
	stream  int
	regions map[uint32]*region

	// Optional failure injection.
	checkErr   func(h *iwarpwire.DDPUntaggedHeader) error
	deliverErr func(m *Message) error

	delivered []Message
	payloads  [][]byte // copy of each untagged message's data at delivery
	failed    []*RecvError
	closed    []error
	closedCh  chan struct{}
}

func newTestULP() *testULP {
	return &testULP{regions: map[uint32]*region{}, closedCh: make(chan struct{})}
}

func (u *testULP) register(stag uint32, buf []byte, stream int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.regions[stag] = &region{buf: buf, stream: stream}
}

func (u *testULP) TaggedTarget(h *iwarpwire.DDPTaggedHeader, length int) ([]byte, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	r, ok := u.regions[h.STag]
	if !ok {
		return nil, &iwarpwire.DDPError{Type: iwarp.DDPTypeTagged, Code: iwarp.Term.DDPInvalidSTag.Code}
	}
	if r.stream != u.stream {
		return nil, &iwarpwire.DDPError{Type: iwarp.DDPTypeTagged, Code: iwarp.Term.DDPSTagNotAssociated.Code}
	}
	n := uint64(length)
	if h.TO > math.MaxUint64-n {
		return nil, &iwarpwire.DDPError{Type: iwarp.DDPTypeTagged, Code: iwarp.Term.DDPTOWrap.Code}
	}
	if h.TO >= uint64(len(r.buf)) || h.TO+n > uint64(len(r.buf)) {
		return nil, &iwarpwire.DDPError{Type: iwarp.DDPTypeTagged, Code: iwarp.Term.DDPBaseBounds.Code,
			Err: fmt.Errorf("TO %d + %d > %d", h.TO, n, len(r.buf))}
	}
	return r.buf[h.TO : h.TO+n : h.TO+n], nil
}

func (u *testULP) CheckUntagged(h *iwarpwire.DDPUntaggedHeader) error {
	if u.checkErr != nil {
		return u.checkErr(h)
	}
	return nil
}

func (u *testULP) Deliver(m *Message) error {
	u.mu.Lock()
	u.delivered = append(u.delivered, *m)
	if !m.Tagged {
		u.payloads = append(u.payloads, append([]byte{}, m.Buffer...))
	} else {
		u.payloads = append(u.payloads, nil)
	}
	u.mu.Unlock()
	if u.deliverErr != nil {
		return u.deliverErr(m)
	}
	return nil
}

func (u *testULP) Failed(err *RecvError) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.failed = append(u.failed, err)
}

func (u *testULP) Closed(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = append(u.closed, err)
	if len(u.closed) == 1 {
		close(u.closedCh)
	}
}

func (u *testULP) snapshot() (delivered []Message, failed []*RecvError) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Message(nil), u.delivered...), append([]*RecvError(nil), u.failed...)
}

// recStream is an llp.Stream that records segments and reports a MULPDU
// from a schedule indexed by the number of segments sent so far (the last
// entry repeats), so tests can change the MULPDU mid-message.
type recStream struct {
	schedule []int
	segs     [][]byte
	asked    []int // MULPDU value in force for each SendSegment
	failAt   int   // SendSegment number (1-based) that fails; 0: never
	err      error
}

func (s *recStream) MULPDU() int {
	i := min(len(s.segs), len(s.schedule)-1)
	return s.schedule[i]
}

func (s *recStream) SendSegment(hdr, payload []byte) error {
	if s.failAt != 0 && len(s.segs)+1 == s.failAt {
		return s.err
	}
	m := s.MULPDU()
	if len(hdr)+len(payload) > m {
		return fmt.Errorf("recStream: %d > %d: %w", len(hdr)+len(payload), m, llp.ErrSegmentTooLarge)
	}
	seg := append(append([]byte{}, hdr...), payload...)
	s.segs = append(s.segs, seg)
	s.asked = append(s.asked, m)
	return nil
}

func (s *recStream) Start(llp.Handler) {}
func (s *recStream) Close() error      { return nil }
func (s *recStream) Abort() error      { return nil }
func (s *recStream) Info() llp.Info    { return llp.Info{Kind: "rec"} }

// discardStream is an llp.Stream that drops every segment: for benchmarks.
type discardStream struct {
	mulpdu int
	n      int
}

func (s *discardStream) MULPDU() int { return s.mulpdu }
func (s *discardStream) SendSegment(hdr, payload []byte) error {
	s.n += len(hdr) + len(payload)
	return nil
}
func (s *discardStream) Start(llp.Handler) {}
func (s *discardStream) Close() error      { return nil }
func (s *discardStream) Abort() error      { return nil }
func (s *discardStream) Info() llp.Info    { return llp.Info{Kind: "discard"} }

// taggedSeg builds a tagged segment.
func taggedSeg(last bool, ulp uint8, stag uint32, to uint64, payload []byte) []byte {
	h := iwarpwire.DDPTaggedHeader{Last: last, RsvdULP: ulp, STag: stag, TO: to}
	return append(h.Append(nil), payload...)
}

// untaggedSeg builds an untagged segment.
func untaggedSeg(last bool, qn, msn, mo uint32, payload []byte) []byte {
	h := iwarpwire.DDPUntaggedHeader{Last: last, QN: qn, MSN: msn, MO: mo}
	return append(h.Append(nil), payload...)
}
