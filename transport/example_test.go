package transport_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// echo is a transport.Handler that answers every Send with the same
// octets, upper-cased.
type echo struct{}

func (echo) Admit(netip.Addr, []byte) error { return nil }
func (echo) Prepare(*rdmap.Endpoint) error  { return nil }
func (echo) Dropped(netip.Addr)             {}
func (echo) Serve(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
	buf := make([]byte, 64)
	for {
		c, err := ep.Recv(ctx, buf)
		if err != nil {
			return
		}
		out := []byte(fmt.Sprintf("%X", buf[:c.Length]))
		if err := ep.Send(ctx, out); err != nil {
			return
		}
	}
}

// Example runs the same two streams over the project's own userspace SCTP
// and over MPA/TCP: the Options' LLP is the only difference.
func Example() {
	for _, llp := range []string{transport.SCTPNative, transport.MPA} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		dev := rdmap.NewDevice(rdmap.DeviceOptions{})
		o := transport.Options{LLP: llp}

		ln, err := transport.Listen(o, "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		served := make(chan error, 1)
		sctx, stop := context.WithCancel(ctx)
		go func() { served <- ln.Serve(sctx, dev.AllocPD(), echo{}) }()

		cl, err := transport.Dial(ctx, o, ln.Addr(), 2, dev.AllocPD(), nil)
		if err != nil {
			log.Fatal(err)
		}
		for i, ep := range cl.Endpoints {
			reply := make([]byte, 64)
			got := make(chan rdmap.Completion, 1)
			go func() { c, _ := ep.Recv(ctx, reply); got <- c }()
			if err := ep.Send(ctx, []byte{byte(0xA0 + i)}); err != nil {
				log.Fatal(err)
			}
			c := <-got
			fmt.Printf("%s stream %d: %s\n", llp, i, reply[:c.Length])
		}
		if err := cl.Close(ctx); err != nil {
			log.Fatal(err)
		}
		stop()
		if err := <-served; err != nil {
			log.Fatal(err)
		}
		cancel()
	}
	// Output:
	// sctp-native stream 0: A0
	// sctp-native stream 1: A1
	// mpa stream 0: A0
	// mpa stream 1: A1
}
