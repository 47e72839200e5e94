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
	dev := rdmap.NewDevice(rdmap.DeviceOptions{})
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
func ExampleEndpoint_Send() {
	a, b, closeBoth := connect(func(b *rdmap.Endpoint) {
		_ = b.PostRecv(rdmap.RecvWR{ID: 1, Buf: make([]byte, 64)}) // before a Send can arrive
	})
	defer closeBoth()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if err := a.Send(ctx, []byte("hello")); err != nil {
		log.Fatal(err)
	}
	c, err := b.RecvCQ().Poll(ctx)
	if err != nil || c.Err != nil {
		log.Fatal(err, c.Err)
	}
	fmt.Printf("%v %d: %s\n", c.Op, c.WRID, c.Data())
	_ = b.PostRecv(rdmap.RecvWR{ID: 1, Buf: c.Buf}) // the same buffer, for the next Send
	// Output: Recv 1: hello
}

// An RDMA Write places octets in the peer's registered memory (RFC 5040
// §5.1) without the peer posting anything; the STag and tagged offset
// reach the writer out of band (in a program, in a Send). The peer learns
// that the Write is placed from a later message: a Send after it is
// delivered only once the Write is placed (RFC 5040 §5.5 rule 5).
func ExampleEndpoint_Write() {
	var target *rdmap.MR
	a, b, closeBoth := connect(func(b *rdmap.Endpoint) {
		target, _ = b.PD().Register(make([]byte, 64), rdmap.RemoteWrite, rdmap.MROption{BaseTO: 0x1000})
		_ = b.PostRecv(rdmap.RecvWR{Buf: make([]byte, 8)}) // for the "done" Send
	})
	defer closeBoth()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if err := a.Write(ctx, []byte("placed"), target.STag(), 0x1000+8); err != nil {
		log.Fatal(err)
	}
	if err := a.Send(ctx, []byte("done")); err != nil {
		log.Fatal(err)
	}
	if c, err := b.RecvCQ().Poll(ctx); err != nil || c.Err != nil {
		log.Fatal(err, c.Err)
	}
	fmt.Printf("%q\n", target.Bytes()[8:14])
	// Output: "placed"
}

// An RDMA Read fetches the peer's registered memory into a local sink
// registered with LocalWrite (RFC 5040 §5.2); it completes once the data
// is placed.
func ExampleEndpoint_Read() {
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
	if err := a.Read(ctx, sink, 0, 13, source.STag(), source.BaseTO()); err != nil {
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
func ExampleEndpoint_FetchAdd() {
	var counter *rdmap.MR
	a, _, closeBoth := connect(func(b *rdmap.Endpoint) {
		counter, _ = b.PD().Register(make([]byte, 16), rdmap.RemoteAtomic)
		_ = counter.PutUint64(8, 100)
	})
	defer closeBoth()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	orig, err := a.FetchAdd(ctx, counter.STag(), 8, 5, 0) // mask 0: one 64-bit field
	if err != nil {
		log.Fatal(err)
	}
	now, _ := counter.Uint64(8)
	fmt.Println("was", orig, "now", now)
	_, err = a.FetchAdd(ctx, counter.STag(), 4, 1, 0)
	fmt.Println(err)
	// Output:
	// was 100 now 105
	// rdmap: invalid work request: rdmap: atomic target not 8-octet aligned: FetchAdd: remote TO 0x4 is not a multiple of 8 (RFC 7306 §5.1: an atomic targets a 64-bit aligned address)
}

// CmpSwap replaces the word only if it equals the compare value (under
// the masks) and returns what it held either way (RFC 7306 §5.1.2): a
// lock taken by the first CmpSwap, refused to the second.
func ExampleEndpoint_CmpSwap() {
	var lock *rdmap.MR
	a, _, closeBoth := connect(func(b *rdmap.Endpoint) {
		lock, _ = b.PD().Register(make([]byte, 8), rdmap.RemoteAtomic)
	})
	defer closeBoth()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	const all = ^uint64(0)
	for _, owner := range []uint64{7, 9} {
		orig, err := a.CmpSwap(ctx, lock.STag(), 0, 0, all, owner, all) // free (0)? take it
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
func ExampleEndpoint_WriteImm() {
	var target *rdmap.MR
	a, b, closeBoth := connect(func(b *rdmap.Endpoint) {
		target, _ = b.PD().Register(make([]byte, 64), rdmap.RemoteWrite)
		_ = b.PostRecv(rdmap.RecvWR{ID: 2, Buf: make([]byte, 8)}) // Immediate Data consumes a receive
	})
	defer closeBoth()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	msg := []byte("written, then announced")
	if err := a.WriteImm(ctx, msg, target.STag(), 0, uint64(len(msg)), false); err != nil {
		log.Fatal(err)
	}
	c, err := b.RecvCQ().Poll(ctx)
	if err != nil || c.Err != nil {
		log.Fatal(err, c.Err)
	}
	fmt.Printf("%v imm=%d: %s\n", c.Op, c.Imm, target.Bytes()[:c.Imm])
	// Output: RecvImm imm=23: written, then announced
}
