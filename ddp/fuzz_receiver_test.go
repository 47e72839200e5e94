package ddp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
)

// Fuzz input format for FuzzReceiver: a sequence of records
// [op][len:2 big-endian][len octets]. op 0x06 drains the Receiver, op with
// low bits 0x7 posts a buffer of len%200 octets on QN (op>>3)&3 (the
// octets are ignored) or, on QN 3, a credit queue of fuzzCreditSize-octet
// buffers (Receiver.PostCredits), len%4 credits; anything else hands the
// octets to HandleSegment.
const (
	fuzzOpDrain = 0x06
	fuzzOpPost  = 0x07

	fuzzCreditQN   = 3
	fuzzCreditSize = 24
)

func fuzzRecord(op byte, data []byte) []byte {
	b := []byte{op, 0, 0}
	binary.BigEndian.PutUint16(b[1:], uint16(len(data)))
	return append(b, data...)
}

func fuzzSeeds() [][]byte {
	cat := func(recs ...[]byte) []byte { return bytes.Join(recs, nil) }
	return [][]byte{
		cat(fuzzRecord(0, untaggedSeg(true, 0, 1, 0, nil)), fuzzRecord(0, untaggedSeg(true, 0, 2, 0, []byte("0123456789abcdef")))),
		cat(fuzzRecord(0, untaggedSeg(false, 0, 1, 0, nil)), fuzzRecord(0, untaggedSeg(true, 0, 1, 0, nil))),
		cat(fuzzRecord(0, untaggedSeg(true, 0, 1, 0, nil)), fuzzRecord(0, untaggedSeg(false, 0, 2, 8, []byte("89abcdef"))),
			fuzzRecord(0, untaggedSeg(true, 0, 2, 0, []byte("01234567")))),
		cat(fuzzRecord(0, untaggedSeg(true, 0, 1, 0, nil)), fuzzRecord(0, untaggedSeg(false, 0, 2, 4, []byte("4567"))),
			fuzzRecord(0, untaggedSeg(true, 0, 2, 8, []byte("89abcdef")))),
		cat(fuzzRecord(0, taggedSeg(false, 0x40, 1, 0, []byte("hello"))), fuzzRecord(0, taggedSeg(true, 0x40, 1, 5, []byte("world")))),
		cat(fuzzRecord(0, taggedSeg(true, 0x40, 1, 60, []byte("hello")))),
		cat(fuzzRecord(0, taggedSeg(true, 0x40, 2, 0, []byte("x")))),
		cat(fuzzRecord(0, taggedSeg(true, 0xfe, 9, 0, nil))),
		cat(fuzzRecord(fuzzOpPost|3<<3, make([]byte, 10)), fuzzRecord(0, untaggedSeg(true, 3, 1, 0, []byte("0123456789")))),
		cat(fuzzRecord(0, untaggedSeg(false, 1, 1, 0, []byte("ab"))), fuzzRecord(0, untaggedSeg(false, 2, 1, 0, []byte("cd"))),
			fuzzRecord(0, untaggedSeg(true, 1, 1, 2, []byte("ef"))), fuzzRecord(fuzzOpDrain, nil)),
		cat(fuzzRecord(0, []byte{0xc1, 0x40}), fuzzRecord(0, nil)),
		cat(fuzzRecord(0, untaggedSeg(false, 3, 1, 8, []byte("89abcdef"))), fuzzRecord(0, untaggedSeg(true, 3, 1, 16, []byte("ghijklmn"))),
			fuzzRecord(fuzzOpPost|3<<3, make([]byte, 2)), fuzzRecord(0, untaggedSeg(true, 3, 2, 0, make([]byte, 24))),
			fuzzRecord(0, untaggedSeg(true, 3, 3, 20, make([]byte, 5)))),
		cat(fuzzRecord(0, append([]byte{0x42}, make([]byte, 20)...))),
	}
}

const fuzzGuard = 16

// guarded is memory handed to the Receiver with guard octets either side.
type guarded struct {
	backing []byte
	buf     []byte
	cookie  uint64
}

func newGuarded(n int, cookie uint64) *guarded {
	backing := bytes.Repeat([]byte{0xa5}, n+2*fuzzGuard)
	return &guarded{backing: backing, buf: backing[fuzzGuard : fuzzGuard+n : fuzzGuard+n], cookie: cookie}
}

func (g *guarded) intact() bool {
	n := len(g.backing)
	for i := 0; i < fuzzGuard; i++ {
		if g.backing[i] != 0xa5 || g.backing[n-1-i] != 0xa5 {
			return false
		}
	}
	return true
}

// FuzzReceiver feeds a Receiver with posted buffers and registered regions an
// arbitrary sequence of segments, posts and drains. It checks that nothing
// panics, nothing is written outside the posted or registered memory,
// every error is a *RecvError carrying a valid RFC 5041 §7.2 type/code or
// the test ULP's own error, Failed is called at most once, and every posted
// buffer is either delivered or returned by Drain.
//
// Every input runs twice: with a Receiver of its own lock (NewReceiver) and
// with one guarded by the ULP's lock (NewReceiverGuarded), where the posts
// and drains hold that lock and the ULP checks that Deliver, and only
// Deliver, is called with it held.
func FuzzReceiver(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzReceiver(t, in, false)
		fuzzReceiver(t, in, true)
	})
}

func fuzzReceiver(t *testing.T, in []byte, guard bool) {
	u := newTestULP()
	var guardMu sync.Mutex
	held := func() bool {
		if guardMu.TryLock() {
			guardMu.Unlock()
			return false
		}
		return true
	}
	u.checkErr = func(h *iwarpwire.DDPUntaggedHeader) error {
		if guard && held() {
			t.Fatal("CheckUntagged called with the ULP's lock held")
		}
		if h.RsvdULP[0] == 0xff {
			return errTestULP
		}
		return nil
	}
	u.deliverErr = func(m *Message) error {
		if guard && !held() {
			t.Fatal("Deliver called without the ULP's lock")
		}
		if (m.Tagged && m.Tag.RsvdULP == 0xfe) || (!m.Tagged && m.Untag.RsvdULP[0] == 0xfe) {
			return errTestULP
		}
		return nil
	}
	// lock and unlock wrap the ULP's calls into the Receiver.
	lock, unlock := func() {}, func() {}
	if guard {
		lock, unlock = guardMu.Lock, guardMu.Unlock
	}
	var mem []*guarded
	for i, r := range []struct {
		stag   uint32
		size   int
		stream int
	}{{1, 64, 0}, {2, 32, 1}, {3, 0, 0}} {
		g := newGuarded(r.size, uint64(i))
		mem = append(mem, g)
		u.register(r.stag, g.buf, r.stream)
	}
	r := newReceiver(u, 4)
	if guard {
		r = NewReceiverGuarded(u, 4, &guardMu)
	}
	posted := map[uint64]*guarded{}
	var cookie uint64 = 1000
	postBuf := func(qn uint32, n int) {
		g := newGuarded(n, cookie)
		cookie++
		mem = append(mem, g)
		lock()
		_, err := r.PostUntagged(qn, g.buf, g.cookie)
		unlock()
		if err != nil {
			if !errors.Is(err, errStopped) {
				t.Fatalf("post: %v", err)
			}
			return
		}
		posted[g.cookie] = g
	}
	for _, p := range []struct {
		qn uint32
		n  int
	}{{0, 0}, {0, 16}, {0, 100}, {1, 40}, {2, 8}} {
		postBuf(p.qn, p.n)
	}
	credits := 0
	postCredits := func(n int) {
		lock()
		err := r.PostCredits(fuzzCreditQN, n, fuzzCreditSize)
		unlock()
		if err != nil {
			if !errors.Is(err, errStopped) {
				t.Fatalf("post credits: %v", err)
			}
			return
		}
		credits += n
	}
	postCredits(1)

	var first *RecvError
	drained := map[uint64]bool{}
	drainedOnce := false
	for len(in) >= 3 {
		op := in[0]
		n := int(binary.BigEndian.Uint16(in[1:3]))
		in = in[3:]
		n = min(n, len(in))
		data := in[:n]
		in = in[n:]
		switch {
		case op == fuzzOpDrain:
			lock()
			ps := r.drain()
			unlock()
			for _, p := range ps {
				g := posted[p.Cookie]
				if g == nil || drained[p.Cookie] || !sameBuf(g.buf, p.Buf) {
					t.Fatalf("drain returned unknown or repeated buffer %d", p.Cookie)
				}
				drained[p.Cookie] = true
			}
			drainedOnce = true
		case op&7 == fuzzOpPost && (op>>3)&3 == fuzzCreditQN:
			postCredits(n % 4)
		case op&7 == fuzzOpPost:
			postBuf(uint32(op>>3)&3, n%200)
		default:
			err := r.HandleSegment(data)
			switch {
			case err == nil:
				if first != nil {
					t.Fatal("segment accepted after a failure")
				}
			case drainedOnce && first == nil && errors.Is(err, errStopped):
			default:
				var re *RecvError
				if !errors.As(err, &re) {
					t.Fatalf("not a *RecvError: %v", err)
				}
				if first != nil {
					if re != first {
						t.Fatalf("second distinct failure %v after %v", re, first)
					}
					break // dropped, RFC 5041 §7.1
				}
				first = re
				if e, ok := asError(re.Err); ok {
					if !iwarpwire.ValidDDPCode(e.Type, e.Code) {
						t.Fatalf("invalid type/code %v", e)
					}
				} else if !errors.Is(re.Err, errTestULP) {
					t.Fatalf("unexpected cause %v", re.Err)
				}
				if re.SegmentLen != len(data) {
					t.Fatalf("segment length %d, want %d", re.SegmentLen, len(data))
				}
				if len(re.Header) != 0 && !bytes.Equal(re.Header, data[:len(re.Header)]) {
					t.Fatal("header copy differs")
				}
			}
		}
		for _, g := range mem {
			if !g.intact() {
				t.Fatal("write outside a posted or registered buffer")
			}
		}
	}
	delivered, failed := u.snapshot()
	if len(failed) > 1 || (len(failed) == 1 && failed[0] != first) || (first != nil && len(failed) != 1) {
		t.Fatalf("Failed called %d times", len(failed))
	}
	// Nothing posted is lost: delivered + drained == posted.
	lock()
	rest := r.drain()
	unlock()
	for _, p := range rest {
		if drained[p.Cookie] {
			t.Fatalf("buffer %d drained twice", p.Cookie)
		}
		drained[p.Cookie] = true
	}
	got := len(drained)
	creditMsgs := 0
	for _, m := range delivered {
		if m.Tagged {
			continue
		}
		if m.Untag.QN == fuzzCreditQN {
			if m.Cookie != 0 || m.Length != len(m.Buffer) || m.Length > fuzzCreditSize {
				t.Fatalf("credit message of %d octets, cookie %d", m.Length, m.Cookie)
			}
			creditMsgs++
			continue
		}
		g := posted[m.Cookie]
		if g == nil || drained[m.Cookie] {
			t.Fatalf("delivered unknown or drained buffer %d", m.Cookie)
		}
		if m.Length != len(m.Buffer) || m.Length > len(g.buf) || (m.Length > 0 && &m.Buffer[0] != &g.buf[0]) {
			t.Fatalf("delivered length %d of a %d-octet buffer", m.Length, len(g.buf))
		}
		got++
	}
	if creditMsgs > credits {
		t.Fatalf("%d messages on %d credits", creditMsgs, credits)
	}
	if got != len(posted) {
		t.Fatalf("%d buffers posted, %d delivered or drained", len(posted), got)
	}
}

// sameBuf reports whether a and b are the same slice of the same memory.
func sameBuf(a, b []byte) bool {
	return len(a) == len(b) && cap(a) == cap(b) && (cap(a) == 0 || &a[:1][0] == &b[:1][0])
}
