package mpa_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sctp-rdma/sctp-rdma/mpa"
)

type printer struct {
	name string
	done chan struct{}
}

func (p printer) HandleSegment(seg []byte) error {
	fmt.Printf("%s received %q\n", p.name, seg)
	return nil
}

func (p printer) HandleClosed(err error) {
	fmt.Printf("%s closed: %v\n", p.name, err)
	close(p.done)
}

// Example connects an enhanced Initiator to a Responder over loopback TCP,
// negotiates CRCs and IRD/ORD, and sends one DDP segment.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ln, err := mpa.Listen("tcp", "127.0.0.1:0", &mpa.Config{IRD: 4, ORD: 4, PrivateData: []byte("welcome")})
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	accepted := make(chan *mpa.Conn, 1)
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			panic(err)
		}
		accepted <- c
	}()
	cli, err := mpa.Dial(ctx, "tcp", ln.Addr().String(), &mpa.Config{Enhanced: true, IRD: 2, ORD: 8})
	if err != nil {
		panic(err)
	}
	srv := <-accepted
	p := cli.Params()
	fmt.Printf("rev %d crc %t ird %d ord %d peer data %q\n", p.Revision, p.CRC, p.IRD, p.ORD, p.PeerPrivateData)

	h := printer{name: "responder", done: make(chan struct{})}
	srv.Start(h)
	cli.Start(printer{name: "initiator", done: make(chan struct{})})
	if err := cli.SendSegment([]byte{0x41, 0x43}, []byte("hello")); err != nil {
		panic(err)
	}
	_ = cli.Close()
	<-h.done
	_ = srv.Close()
	<-cli.Done()
	// Output:
	// rev 2 crc true ird 2 ord 4 peer data "welcome"
	// responder received "AChello"
	// responder closed: <nil>
	// initiator closed: <nil>
}
