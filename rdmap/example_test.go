package rdmap_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// A CQ handler answers each Send where it arrives: the echo side's
// handler takes the receive completion on the goroutine that received
// the message and posts the answer from there, without a goroutine woken
// per message (the counterpart of polling a CQ in a loop). The answer is
// posted unsignaled: it completes silently unless it fails.
func ExampleCQ_SetHandler() {
	dev := new(rdmap.Device)
	pa, pb := llptest.NewPair() // an in-process LLP pair; sctpllp or mpa in practice
	client, _ := dev.AllocPD().NewEndpoint(pa, rdmap.EndpointConfig{})
	echo, _ := dev.AllocPD().NewEndpoint(pb, rdmap.EndpointConfig{})

	ebuf, cbuf := make([]byte, 64), make([]byte, 64)
	_ = echo.PostRecv(1, ebuf)
	_ = client.PostRecv(2, cbuf)

	var comps [4]rdmap.Completion
	echo.Config().RecvCQ.SetHandler(func() {
		n := echo.Config().RecvCQ.PollN(comps[:])
		for _, c := range comps[:n] {
			if c.Err != nil {
				return // the endpoint went down: c says why
			}
			// Inline: the payload is copied as it is posted, so the
			// buffer may take the next message at once.
			_, _ = echo.PostSend(rdmap.SendWR{Op: rdmap.WRSend, Local: ebuf[:c.Length], Inline: true, Unsignaled: true})
			_ = echo.PostRecv(1, ebuf)
		}
	})
	got := make(chan string, 1)
	client.Config().RecvCQ.SetHandler(func() {
		var c [1]rdmap.Completion
		if client.Config().RecvCQ.PollN(c[:]) == 1 && c[0].Err == nil {
			got <- string(cbuf[:c[0].Length])
		}
	})
	_ = client.Start()
	_ = echo.Start()

	_, _ = client.PostSend(rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("hello"), Inline: true, Unsignaled: true})
	select {
	case s := <-got:
		fmt.Println("echoed:", s)
	case <-time.After(5 * time.Second):
		fmt.Println("no echo")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { _ = echo.Close(ctx); close(done) }()
	_ = client.Close(ctx)
	<-done
	<-client.Done()
	<-echo.Done()
	// Output: echoed: hello
}
