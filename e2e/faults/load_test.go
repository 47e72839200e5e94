package faults

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// load keeps one endpoint's send queue full of a mix of RDMA Writes,
// Reads, Sends and atomics, with receives posted that the peer never
// consumes, and accounts for every work request and completion.
type load struct {
	name string
	ep   *rdmap.Endpoint
	adv  advert
	src  []byte
	sink *rdmap.MR
	conn *mpa.Conn // the MPA connection, if any
	// base and span confine the Writes to this load's slot of the peer's
	// memory: loads on other streams write elsewhere.
	base, span uint64

	mu       sync.Mutex
	posted   map[uint64]rdmap.WorkType
	comps    map[uint64][]rdmap.Completion
	ok, fl   int
	last     time.Time // last completion
	postErr  error     // why posting stopped
	stop     chan struct{}
	wg       sync.WaitGroup
	progress chan struct{} // closed after progressAt successes
	pDone    atomic.Bool
}

const (
	loadRecvs  = 64  // receives posted on the loaded endpoint
	progressAt = 300 // successful completions before the fault
)

// ids are unique per process: a completion can never be mistaken for
// another endpoint's.
var nextID atomic.Uint64

// startLoad starts the poster and the two CQ pollers of ep, which writes
// into slot of the peer's memory split in slots.
func startLoad(t *testing.T, name string, ep *rdmap.Endpoint, adv advert, slot, slots int) *load {
	t.Helper()
	span := adv.write.Length / uint64(slots)
	require.Greater(t, span, uint64(64<<10))
	l := &load{
		name: name, ep: ep, adv: adv, base: uint64(slot) * span, span: span,
		src:      make([]byte, 64<<10),
		posted:   map[uint64]rdmap.WorkType{},
		comps:    map[uint64][]rdmap.Completion{},
		stop:     make(chan struct{}),
		progress: make(chan struct{}),
	}
	fill(l.src, 3)
	var err error
	l.sink, err = ep.PD().Register(make([]byte, 1<<20), rdmap.LocalWrite)
	require.NoError(t, err)
	for range loadRecvs {
		id := nextID.Add(1)
		l.record(id, rdmap.WRRecv)
		require.NoError(t, ep.PostRecv(id, make([]byte, 256)))
	}
	l.wg.Add(3)
	go l.poll(ep.Config().SendCQ)
	go l.poll(ep.Config().RecvCQ)
	go l.post()
	return l
}

func (l *load) record(id uint64, op rdmap.WorkType) {
	l.mu.Lock()
	l.posted[id] = op
	l.mu.Unlock()
}

func (l *load) unrecord(id uint64) {
	l.mu.Lock()
	delete(l.posted, id)
	l.mu.Unlock()
}

// wr returns the i-th work request of the mix. Reads and atomics (bounded
// by ORD) fence the queue, so Sends never outrun the peer's receives.
func (l *load) wr(i int) rdmap.SendWR {
	id := nextID.Add(1)
	off := l.base + uint64(i*4096)%(l.span-32<<10)
	switch i % 8 {
	case 0, 4:
		return rdmap.SendWR{ID: id, Op: rdmap.WRWrite, Local: l.src[:32<<10], RemoteSTag: l.adv.write.STag, RemoteTO: l.adv.write.TO + off}
	case 1, 5:
		return rdmap.SendWR{ID: id, Op: rdmap.WRSend, Local: l.src[:1024]}
	case 2:
		return rdmap.SendWR{ID: id, Op: rdmap.WRRead, Sink: l.sink, SinkOffset: uint64(i*4096) % (1<<20 - 32<<10), Length: 32 << 10,
			RemoteSTag: l.adv.read.STag, RemoteTO: l.adv.read.TO + off}
	case 3:
		return rdmap.SendWR{ID: id, Op: rdmap.WRFetchAdd, RemoteSTag: l.adv.atomic.STag, RemoteTO: l.adv.atomic.TO + uint64(i%64)*8, Add: 1}
	case 6:
		return rdmap.SendWR{ID: id, Op: rdmap.WRWrite, Local: l.src[:4<<10], RemoteSTag: l.adv.write.STag, RemoteTO: l.adv.write.TO + off}
	default:
		return rdmap.SendWR{ID: id, Op: rdmap.WRCmpSwap, RemoteSTag: l.adv.atomic.STag, RemoteTO: l.adv.atomic.TO + 512,
			Compare: 0, CompareMask: 0, Swap: uint64(i), SwapMask: ^uint64(0)}
	}
}

func (l *load) post() {
	defer l.wg.Done()
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			l.setPostErr(errors.New("stopped"))
			return
		default:
		}
		wr := l.wr(i)
		l.record(wr.ID, wr.Op)
		_, err := l.ep.PostSend(wr)
		for errors.Is(err, rdmap.ErrResourceLimit) {
			select {
			case <-l.stop:
			case <-l.ep.Done():
			case <-time.After(200 * time.Microsecond):
			}
			_, err = l.ep.PostSend(wr)
			if errors.Is(err, rdmap.ErrResourceLimit) {
				select {
				case <-l.stop:
					l.unrecord(wr.ID)
					l.setPostErr(errors.New("stopped"))
					return
				default:
				}
			}
		}
		if err != nil {
			l.unrecord(wr.ID) // refused: never posted, must never complete
			l.setPostErr(err)
			return
		}
	}
}

func (l *load) setPostErr(err error) {
	l.mu.Lock()
	l.postErr = err
	l.mu.Unlock()
}

// wakeOn returns a channel that receives a token whenever cq has new
// completions (the CQ handler, rdmap.CQ.SetHandler); the caller clears the
// handler when done.
func wakeOn(cq *rdmap.CQ) <-chan struct{} {
	wake := make(chan struct{}, 1)
	cq.SetHandler(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	return wake
}

// poll records completions until the endpoint is done and its CQ empty.
func (l *load) poll(cq *rdmap.CQ) {
	defer l.wg.Done()
	wake := wakeOn(cq)
	defer cq.SetHandler(nil)
	var one [1]rdmap.Completion
	for {
		if cq.PollN(one[:]) == 1 {
			l.complete(one[0])
			continue
		}
		select {
		case <-wake:
		case <-l.ep.Done():
			// Whatever the endpoint flushed is on the CQ before Done.
			for cq.PollN(one[:]) == 1 {
				l.complete(one[0])
			}
			return
		}
	}
}

func (l *load) complete(c rdmap.Completion) {
	l.mu.Lock()
	l.comps[c.WRID] = append(l.comps[c.WRID], c)
	l.last = time.Now()
	if c.Err == nil {
		l.ok++
	} else {
		l.fl++
	}
	reached := l.ok >= progressAt
	l.mu.Unlock()
	if reached && l.pDone.CompareAndSwap(false, true) {
		close(l.progress)
	}
}

// outstanding returns the number of posted work requests not completed.
func (l *load) outstanding() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for id := range l.posted {
		if len(l.comps[id]) == 0 {
			n++
		}
	}
	return n
}

// waitProgress waits until the load is well under way.
func waitProgress(t *testing.T, loads []*load, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for _, l := range loads {
		select {
		case <-l.progress:
		case <-l.ep.Done():
			t.Fatalf("%s: endpoint stopped before the fault: %v", l.name, l.ep.Err())
		case <-deadline:
			t.Fatalf("%s: fewer than %d completions within %v", l.name, progressAt, within)
		}
	}
}

// faultResult is what finish measured.
type faultResult struct {
	outstanding int           // work requests outstanding at the fault, all loads
	flushed     int           // completions with StatusFlushed
	toErr       time.Duration // fault → last endpoint stopped
	toFlush     time.Duration // fault → last completion
}

// finish waits (bounded) until every endpoint stopped and every posted work
// request completed, then checks the exactly-once property of RFC 5040
// §5.4 / §6.2.1 and the completion statuses. outstanding is the count
// taken at the fault.
func finish(t *testing.T, loads []*load, fault time.Time, outstanding int, within time.Duration) faultResult {
	t.Helper()
	deadline := time.After(within)
	var stopped time.Time
	for _, l := range loads {
		select {
		case <-l.ep.Done():
		case <-deadline:
			for _, l := range loads {
				close(l.stop)
			}
			t.Fatalf("%s: endpoint still running %v after the fault (outstanding %d)", l.name, within, l.outstanding())
		}
		stopped = time.Now()
	}
	for _, l := range loads {
		close(l.stop)
	}
	for _, l := range loads {
		waited := make(chan struct{})
		go func() { l.wg.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-deadline:
			t.Fatalf("%s: poster or pollers still running after the endpoint stopped", l.name)
		}
	}
	res := faultResult{outstanding: outstanding, toErr: stopped.Sub(fault)}
	var last time.Time
	for _, l := range loads {
		l.mu.Lock()
		var missing, dup, unknown []uint64
		for id := range l.posted {
			switch n := len(l.comps[id]); {
			case n == 0:
				missing = append(missing, id)
			case n > 1:
				dup = append(dup, id)
			}
		}
		for id, cs := range l.comps {
			if _, ok := l.posted[id]; !ok {
				unknown = append(unknown, id)
			}
			for _, c := range cs {
				switch {
				case c.Err == nil:
				case errors.Is(c.Err, rdmap.ErrFlushed):
					res.flushed++
				default:
					assert.Failf(t, "unexpected error", "%s: WR %d (%v): %v", l.name, id, c.Op, c.Err)
				}
			}
		}
		sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
		assert.Empty(t, missing, "%s: posted work requests without a completion (of %d posted)", l.name, len(l.posted))
		assert.Empty(t, dup, "%s: work requests completed more than once", l.name)
		assert.Empty(t, unknown, "%s: completions of work requests never posted", l.name)
		// The receives posted on the loaded endpoint are never consumed:
		// each must be flushed.
		recvFlushed := 0
		for id, op := range l.posted {
			if op == rdmap.WRRecv && len(l.comps[id]) == 1 && errors.Is(l.comps[id][0].Err, rdmap.ErrFlushed) {
				recvFlushed++
			}
		}
		assert.Equal(t, loadRecvs, recvFlushed, "%s: posted receives flushed", l.name)
		if l.last.After(last) {
			last = l.last
		}
		t.Logf("%s: %d posted, %d succeeded, %d flushed; posting ended with: %v", l.name, len(l.posted), l.ok, l.fl, l.postErr)
		l.mu.Unlock()
	}
	res.toFlush = last.Sub(fault)
	// Work requests outstanding at the fault may still succeed (a Write
	// handed to the LLP completes, RFC 5040 §5.5 rule 14), but a Read or
	// atomic waiting for the dead peer cannot; the posted receives are
	// flushed in every case (checked above).
	assert.Greater(t, res.outstanding, 0, "no work request was outstanding at the fault")
	return res
}

// totalOutstanding sums outstanding over loads.
func totalOutstanding(loads []*load) int {
	n := 0
	for _, l := range loads {
		n += l.outstanding()
	}
	return n
}

func (r faultResult) String() string {
	return fmt.Sprintf("%d WRs outstanding at the fault, %d flushed; endpoints stopped after %v, last completion after %v",
		r.outstanding, r.flushed, r.toErr.Round(time.Millisecond), r.toFlush.Round(time.Millisecond))
}
