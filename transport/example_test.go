package transport_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// echo is a transport.Handler that answers every Send with the same
// octets in hexadecimal. A receive is always posted before the message it
// takes can arrive (RFC 5041 §7.1: an untagged message without a buffer
// is an error that ends the stream): one in Prepare, before the endpoint
// starts, and the next before each answer goes out.
type echo struct {
	mu   sync.Mutex
	bufs map[*rdmap.Endpoint][]byte
}

func (*echo) Admit(netip.Addr, []byte) error { return nil }
func (*echo) Dropped(netip.Addr)             {}
func (h *echo) Prepare(ep *rdmap.Endpoint) error {
	buf := make([]byte, 64)
	h.mu.Lock()
	h.bufs[ep] = buf
	h.mu.Unlock()
	return ep.PostRecv(0, buf)
}
func (h *echo) Serve(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
	h.mu.Lock()
	buf := h.bufs[ep]
	h.mu.Unlock()
	for {
		c, err := ep.Config().RecvCQ.Poll(ctx)
		if err != nil || c.Err != nil {
			return
		}
		out := []byte(fmt.Sprintf("%X", buf[:c.Length]))
		if err := ep.PostRecv(0, buf); err != nil {
			return
		}
		if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: out}); err != nil {
			return
		}
	}
}

// Example runs the same two streams over the project's own userspace SCTP,
// over pion's and over MPA/TCP: the Options' LLP is the only difference
// (sctp-kernel, on a kernel with SCTP, is one more name).
func Example() {
	for _, llp := range []string{transport.SCTPNative, transport.SCTPPion, transport.MPA} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		dev := new(rdmap.Device)
		o := transport.Options{LLP: llp}

		ln, err := transport.Listen(o, "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		served := make(chan error, 1)
		sctx, stop := context.WithCancel(ctx)
		go func() { served <- ln.Serve(sctx, dev.AllocPD(), &echo{bufs: map[*rdmap.Endpoint][]byte{}}) }()

		cl, err := transport.Dial(ctx, o, ln.Addr(), 2, dev.AllocPD(), nil)
		if err != nil {
			log.Fatal(err)
		}
		for i, ep := range cl.Endpoints {
			reply := make([]byte, 64)
			if err := ep.PostRecv(0, reply); err != nil { // before the answer can come
				log.Fatal(err)
			}
			if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte{byte(0xA0 + i)}}); err != nil {
				log.Fatal(err)
			}
			c, err := ep.Config().RecvCQ.Poll(ctx)
			if err != nil {
				log.Fatal(err)
			}
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
	// sctp-pion stream 0: A0
	// sctp-pion stream 1: A1
	// mpa stream 0: A0
	// mpa stream 1: A1
}

// Example_isolatedStreams: over SCTP each stream is its own DDP stream
// (RFC 5043 §4), so a stream that breaks a rule is terminated alone. The
// first stream writes to an STag the peer never registered; the peer
// terminates that stream (RFC 5040 §7: an invalid STag is a DDP tagged
// buffer error), and the second stream carries on.
func Example_isolatedStreams() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dev := new(rdmap.Device)
	o := transport.Options{LLP: transport.SCTPNative}
	ln, err := transport.Listen(o, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ln.Serve(sctx, dev.AllocPD(), &echo{bufs: map[*rdmap.Endpoint][]byte{}}) }()

	cl, err := transport.Dial(ctx, o, ln.Addr(), 2, dev.AllocPD(), nil)
	if err != nil {
		log.Fatal(err)
	}
	bad, good := cl.Endpoints[0], cl.Endpoints[1]
	if _, err := bad.Do(ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: []byte("nobody registered this"), RemoteSTag: 0xdead00}); err != nil {
		log.Fatal(err)
	}
	<-bad.Done()
	var te *rdmap.TerminateError
	if errors.As(bad.Err(), &te) {
		fmt.Printf("stream 0: terminated by the peer: %v\n", te.Code)
	}

	reply := make([]byte, 64)
	if err := good.PostRecv(0, reply); err != nil {
		log.Fatal(err)
	}
	if _, err := good.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("still here")}); err != nil {
		log.Fatal(err)
	}
	c, err := good.Config().RecvCQ.Poll(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stream 1: %s\n", reply[:c.Length])

	_ = cl.Close(ctx)
	stop()
	if err := <-served; err != nil {
		log.Fatal(err)
	}
	// Output:
	// stream 0: terminated by the peer: DDP tagged buffer error: invalid STag (1/1/0x00)
	// stream 1: 7374696C6C2068657265
}
