package transport_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// upper is a server made of functions (transport.HandlerFuncs): every
// stream gets a receive posted before it starts, and each Send is
// answered in upper case, the receive buffer going back for the next one.
var upper = &transport.HandlerFuncs{
	OnPrepare: func(ep *rdmap.Endpoint) error { return ep.PostRecv(0, make([]byte, 64)) },
	OnServe: func(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
		for {
			c, err := ep.Config().RecvCQ.Poll(ctx)
			if err != nil || c.Err != nil {
				return // ctx ended, or the peer closed or went away
			}
			answer := strings.ToUpper(string(c.Buf[:c.Length]))
			if err := ep.PostRecv(0, c.Buf); err != nil {
				return
			}
			if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte(answer)}); err != nil {
				return
			}
		}
	},
}

// Listen announces on a port and Serve hands every accepted stream to a
// Handler until its context ends; then it closes each stream gracefully,
// and the clients see transport.ErrPeerClosed.
func ExampleListen() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := transport.Options{LLP: transport.SCTPNative}
	ln, err := transport.Listen(o, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ln.Serve(sctx, new(rdmap.Device).AllocPD(), upper) }()

	// A client, to see the server answer and then stop.
	cl, err := transport.Dial(ctx, o, ln.Addr(), 1, new(rdmap.Device).AllocPD(), nil)
	if err != nil {
		log.Fatal(err)
	}
	ep := cl.Endpoints[0]
	if err := ep.PostRecv(0, make([]byte, 64)); err != nil {
		log.Fatal(err)
	}
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("hi")}); err != nil {
		log.Fatal(err)
	}
	c, err := ep.Config().RecvCQ.Poll(ctx)
	if err != nil || c.Err != nil {
		log.Fatal(err, c.Err)
	}
	fmt.Printf("%s\n", c.Buf[:c.Length])

	stop() // the server stops
	if err := <-served; err != nil {
		log.Fatal(err)
	}
	<-ep.Done()
	fmt.Println(ep.Err(), errors.Is(ep.Err(), transport.ErrPeerClosed))
	cl.Abort()
	// Output:
	// HI
	// rdmap: the peer closed the stream true
}

// Dial opens streams to a listener and starts an endpoint on each; a
// receive is posted before the Send whose answer it takes (RFC 5041 §7.1).
// Where nothing listens, Dial fails with syscall.ECONNREFUSED over every
// lower layer.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := transport.Options{LLP: transport.SCTPNative} // or SCTPPion, SCTPKernel, MPA
	ln, err := transport.Listen(o, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ln.Serve(sctx, new(rdmap.Device).AllocPD(), upper) }()

	cl, err := transport.Dial(ctx, o, ln.Addr(), 2, new(rdmap.Device).AllocPD(), nil)
	if err != nil {
		log.Fatal(err)
	}
	for i, ep := range cl.Endpoints {
		if err := ep.PostRecv(0, make([]byte, 64)); err != nil {
			log.Fatal(err)
		}
		if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte(fmt.Sprintf("hello from stream %d", i))}); err != nil {
			log.Fatal(err)
		}
		c, err := ep.Config().RecvCQ.Poll(ctx)
		if err != nil || c.Err != nil {
			log.Fatal(err, c.Err)
		}
		fmt.Printf("%s\n", c.Buf[:c.Length])
	}
	if err := cl.Close(ctx); err != nil {
		log.Fatal(err)
	}
	stop()
	if err := <-served; err != nil {
		log.Fatal(err)
	}

	_, err = transport.Dial(ctx, o, ln.Addr(), 1, new(rdmap.Device).AllocPD(), nil)
	fmt.Println("after the server stopped:", errors.Is(err, syscall.ECONNREFUSED))
	// Output:
	// HELLO FROM STREAM 0
	// HELLO FROM STREAM 1
	// after the server stopped: true
}
