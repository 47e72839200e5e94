package sctp_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sctp-rdma/sctp-rdma/sctp"
)

// A listener and a dialer on loopback exchange one message each way, then
// close the association gracefully (RFC 9260 §5.1 start, §9.2 shutdown).
func ExampleDial() {
	ln, cli, srv := loopbackPair()
	defer ln.Close()

	got := make(chan string, 2)
	srvDone, cliDone := make(chan error, 1), make(chan error, 1)
	srv.Start(func(sid uint16, ppid uint32, b []byte) {
		got <- fmt.Sprintf("server got %q on stream %d, PPID %d", b, sid, ppid)
		_ = srv.WriteMsg(sid, ppid, []byte("pong"))
	}, func(err error) { srvDone <- err })
	cli.Start(func(sid uint16, ppid uint32, b []byte) {
		got <- fmt.Sprintf("client got %q on stream %d", b, sid)
	}, func(err error) { cliDone <- err })

	if err := cli.WriteMsg(3, 16, []byte("ping")); err != nil {
		panic(err)
	}
	fmt.Println(<-got)
	fmt.Println(<-got)
	ad := srv.Stats().PeerAdaptation
	fmt.Printf("peer's adaptation indication: %#x (DDP, RFC 5043 §5.1)\n", ad)

	fmt.Println("close:", cli.Close())
	fmt.Println("server's end:", <-srvDone)
	<-cliDone
	// Output:
	// server got "ping" on stream 3, PPID 16
	// client got "pong" on stream 3
	// peer's adaptation indication: 0x1 (DDP, RFC 5043 §5.1)
	// close: <nil>
	// server's end: <nil>
}

// The segments of one DDP message go as WriteMsgMore, the last as
// WriteMsg: the association may hold the first ones and send them all
// with one system call (a run of packets, UDP_SEGMENT, to a peer on
// another host; sendmmsg to one on this host). The receiver sees each
// message, in order.
func ExampleAssociation_WriteMsgMore() {
	ln, cli, srv := loopbackPair()
	defer ln.Close()
	defer cli.Abort()
	defer srv.Abort()

	got := make(chan int, 3)
	srv.Start(func(_ uint16, _ uint32, b []byte) { got <- len(b) }, func(error) {})
	cli.Start(func(uint16, uint32, []byte) {}, func(error) {})

	segment := make([]byte, cli.MaxMessage())
	for i, n := range []int{len(segment), len(segment), 100} {
		write := cli.WriteMsgMore
		if i == 2 {
			write = cli.WriteMsg // the last segment sends what is held
		}
		if err := write(1, 16, segment[:n]); err != nil {
			panic(err)
		}
	}
	fmt.Println(<-got == len(segment), <-got == len(segment), <-got)
	// Output:
	// true true 100
}

// loopbackPair starts a listener on loopback and returns it with a dialed
// association and the one it accepted.
func loopbackPair() (ln *sctp.Listener, cli, srv *sctp.Association) {
	ln, err := sctp.Listen("udp4", "127.0.0.1:0", nil)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	accepted := make(chan *sctp.Association, 1)
	go func() {
		a, err := ln.Accept(ctx)
		if err != nil {
			panic(err)
		}
		accepted <- a
	}()
	cli, err = sctp.Dial(ctx, "udp4", ln.Addr().String(), nil)
	if err != nil {
		panic(err)
	}
	return ln, cli, <-accepted
}
