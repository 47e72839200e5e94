package rdmap_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// connect returns two started endpoints over an in-process LLP pair (in a
// program: transport.Dial and transport.Listen over SCTP or MPA), each in
// its own protection domain, and a function that closes both. prepare, if
// not nil, runs on the responder b before it starts: the place to post
// its first receives and register its memory.
func connect(prepare func(b *rdmap.Endpoint)) (a, b *rdmap.Endpoint, closeBoth func()) {
	dev := new(rdmap.Device)
	pa, pb := llptest.NewPair()
	a, err := dev.AllocPD().NewEndpoint(pa, rdmap.EndpointConfig{})
	if err != nil {
		log.Fatal(err)
	}
	b, err = dev.AllocPD().NewEndpoint(pb, rdmap.EndpointConfig{})
	if err != nil {
		log.Fatal(err)
	}
	if prepare != nil {
		prepare(b)
	}
	if err := a.Start(); err != nil {
		log.Fatal(err)
	}
	if err := b.Start(); err != nil {
		log.Fatal(err)
	}
	return a, b, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() { _ = b.Close(ctx); close(done) }()
		_ = a.Close(ctx)
		<-done
	}
}

// A Send consumes the oldest receive the peer posted (RFC 5040 §5.3); the
// receive completion carries the buffer back, so it can be posted again.
func ExampleEndpoint_Do_send() {
	a, b, closeBoth := connect(func(b *rdmap.Endpoint) {
		_ = b.PostRecv(1, make([]byte, 64)) // before a Send can arrive
	})
	defer closeBoth()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if _, err := a.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("hello")}); err != nil {
		log.Fatal(err)
	}
	c, err := b.Config().RecvCQ.Poll(ctx)
	if err != nil || c.Err != nil {
		log.Fatal(err, c.Err)
	}
	fmt.Printf("%v %d: %s\n", c.Op, c.WRID, c.Buf[:c.Length])
	_ = b.PostRecv(1, c.Buf) // the same buffer, for the next Send
	// Output: Recv 1: hello
}

// An RDMA Write places octets in the peer's registered memory (RFC 5040
// §5.1) without the peer posting anything; the STag and tagged offset
// reach the writer out of band (in a program, in a Send). The peer learns
// that the Write is placed from a later message: a Send after it is
// delivered only once the Write is placed (RFC 5040 §5.5 rule 5).
func ExampleEndpoint_Do_write() {
	var target *rdmap.MR
	a, b, closeBoth := connect(func(b *rdmap.Endpoint) {
		target, _ = b.PD().Register(make([]byte, 64), rdmap.RemoteWrite, rdmap.MROption{BaseTO: 0x1000})
		_ = b.PostRecv(0, make([]byte, 8)) // for the "done" Send
	})
	defer closeBoth()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if _, err := a.Do(ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: []byte("placed"), RemoteSTag: target.STag(), RemoteTO: 0x1000 + 8}); err != nil {
		log.Fatal(err)
	}
	if _, err := a.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("done")}); err != nil {
		log.Fatal(err)
	}
	if c, err := b.Config().RecvCQ.Poll(ctx); err != nil || c.Err != nil {
		log.Fatal(err, c.Err)
	}
	fmt.Printf("%q\n", target.Bytes()[8:14])
	// Output: "placed"
}

// An RDMA Read fetches the peer's registered memory into a local sink
// registered with LocalWrite (RFC 5040 §5.2); it completes once the data
// is placed.
func ExampleEndpoint_Do_read() {
	var source *rdmap.MR
	a, _, closeBoth := connect(func(b *rdmap.Endpoint) {
		source, _ = b.PD().Register([]byte("remote octets"), rdmap.RemoteRead)
	})
	defer closeBoth()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	sink, err := a.PD().Register(make([]byte, 13), rdmap.LocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := a.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: sink, Length: 13, RemoteSTag: source.STag(), RemoteTO: source.BaseTO()}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", sink.Bytes())
	// Output: remote octets
}

// FetchAdd adds to the 8 octets at an 8-aligned tagged offset and returns
// what they held (RFC 7306 §5.1.1). Operands and result are plain values;
// the target word is in the responder's host byte order, so it is set
// with MR.PutUint64 (binary.BigEndian.PutUint64(buf, 100) would read as
// 7205759403792793600 on a little-endian host).
func ExampleEndpoint_Do_fetchadd() {
	var counter *rdmap.MR
	a, _, closeBoth := connect(func(b *rdmap.Endpoint) {
		counter, _ = b.PD().Register(make([]byte, 16), rdmap.RemoteAtomic)
		_ = counter.PutUint64(8, 100)
	})
	defer closeBoth()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	origC, err := a.Do(ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: counter.STag(), RemoteTO: 8, Add: 5}) // mask 0: one 64-bit field

	orig := origC.Orig
	if err != nil {
		log.Fatal(err)
	}
	now, _ := counter.Uint64(8)
	fmt.Println("was", orig, "now", now)
	var _C rdmap.Completion
	_C, err = a.Do(ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: counter.STag(), RemoteTO: 4, Add: 1})
	_ = _C.Orig
	fmt.Println(err)
	// Output:
	// was 100 now 105
	// rdmap: invalid work request: rdmap: atomic target not 8-octet aligned: FetchAdd: remote TO 0x4 is not a multiple of 8 (RFC 7306 §5.1: an atomic targets a 64-bit aligned address)
}

// CmpSwap replaces the word only if it equals the compare value (under
// the masks) and returns what it held either way (RFC 7306 §5.1.2): a
// lock taken by the first CmpSwap, refused to the second.
func ExampleEndpoint_Do_cmpswap() {
	var lock *rdmap.MR
	a, _, closeBoth := connect(func(b *rdmap.Endpoint) {
		lock, _ = b.PD().Register(make([]byte, 8), rdmap.RemoteAtomic)
	})
	defer closeBoth()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	const all = ^uint64(0)
	for _, owner := range []uint64{7, 9} {
		origC, err := a.Do(ctx, rdmap.SendWR{Op: rdmap.WRCmpSwap, RemoteSTag: lock.STag(), CompareMask: all, Swap: owner, SwapMask: all}) // free (0)? take it
		orig := origC.Orig
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("owner %d: found %d, taken %v\n", owner, orig, orig == 0)
	}
	// Output:
	// owner 7: found 0, taken true
	// owner 9: found 7, taken false
}

// Write with Immediate Data places the Write, then completes a receive at
// the peer carrying 8 octets of Immediate Data (RFC 7306 §6): the peer
// learns that the Write is there without a Send.
func ExampleEndpoint_Do_writeimm() {
	var target *rdmap.MR
	a, b, closeBoth := connect(func(b *rdmap.Endpoint) {
		target, _ = b.PD().Register(make([]byte, 64), rdmap.RemoteWrite)
		_ = b.PostRecv(2, make([]byte, 8)) // Immediate Data consumes a receive
	})
	defer closeBoth()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	msg := []byte("written, then announced")
	if _, err := a.Do(ctx, rdmap.SendWR{Op: rdmap.WRWriteImm, Local: msg, RemoteSTag: target.STag(), Imm: uint64(len(msg))}); err != nil {
		log.Fatal(err)
	}
	c, err := b.Config().RecvCQ.Poll(ctx)
	if err != nil || c.Err != nil {
		log.Fatal(err, c.Err)
	}
	fmt.Printf("%v imm=%d: %s\n", c.Op, c.Imm, target.Bytes()[:c.Imm])
	// Output: RecvImm imm=23: written, then announced
}
