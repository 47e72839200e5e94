package transport_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"net/netip"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// target is the passive side of Example_operations: for each stream it
// registers 4 KiB the peer may Write, Read and target with atomics, and
// when the peer asks, tells it where they are with a Send (STag and tagged
// offset: RFC 5040 leaves it to the ULP to carry them); it answers the
// peer's Write with Immediate Data by sending back what that Write placed.
type target struct {
	mu  sync.Mutex
	mrs map[*rdmap.Endpoint]*rdmap.MR
}

func (*target) Admit(netip.Addr, []byte) error { return nil }
func (*target) Dropped(netip.Addr)             {}

// Prepare registers the region and posts the receives for the peer's
// request and for its Immediate Data: a receive posted before the endpoint
// starts is there whatever the peer sends first (RFC 5041 §7.1, an
// untagged message without a buffer is an error).
func (t *target) Prepare(ep *rdmap.Endpoint) error {
	mr, err := ep.PD().Register(make([]byte, 4096), rdmap.RemoteRead|rdmap.RemoteWrite|rdmap.RemoteAtomic,
		rdmap.MROption{BaseTO: 0x10000})
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.mrs[ep] = mr
	t.mu.Unlock()
	if err := ep.PostRecv(1, make([]byte, 64)); err != nil {
		return err
	}
	return ep.PostRecv(2, make([]byte, 8))
}

func (t *target) Serve(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
	t.mu.Lock()
	mr := t.mrs[ep]
	t.mu.Unlock()
	// The Initiator speaks first: over MPA the Responder may send nothing
	// before it has received an FPDU (RFC 5044 §7.1.2 rule 4).
	if _, err := ep.Config().RecvCQ.Poll(ctx); err != nil {
		return
	}
	adv := binary.BigEndian.AppendUint32(nil, mr.STag())
	adv = binary.BigEndian.AppendUint64(adv, mr.BaseTO())
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: adv}); err != nil {
		return
	}
	c, err := ep.Config().RecvCQ.Poll(ctx) // the Immediate Data (RFC 7306 §6.3)
	if err != nil || !c.HasImm {
		return
	}
	n := binary.BigEndian.Uint64(mr.Bytes()[128:]) // the Write before it is placed
	reply := fmt.Sprintf("immediate %#x after %q", c.Imm, mr.Bytes()[136:136+n])
	_, _ = ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte(reply)})
	<-ctx.Done()
}

// Example_operations shows every RDMAP operation between two programs:
// the STag and offset reach the initiator in a Send, then it Writes,
// Reads (a list of four, Endpoint.PostSends), adds atomically and Writes
// with Immediate Data. The code is the
// same for each lower layer.
func Example_operations() {
	for _, llp := range []string{transport.SCTPNative, transport.SCTPPion, transport.MPA} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		dev := new(rdmap.Device)
		o := transport.Options{LLP: llp}
		ln, err := transport.Listen(o, "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		sctx, stop := context.WithCancel(ctx)
		served := make(chan error, 1)
		go func() { served <- ln.Serve(sctx, dev.AllocPD(), &target{mrs: map[*rdmap.Endpoint]*rdmap.MR{}}) }()

		pd := dev.AllocPD()
		cl, err := transport.Dial(ctx, o, ln.Addr(), 1, pd, nil)
		if err != nil {
			log.Fatal(err)
		}
		ep := cl.Endpoints[0]
		// Ask where the target's memory is: the answer's receive is posted
		// before the request goes out.
		buf := make([]byte, 64)
		if err := ep.PostRecv(1, buf); err != nil {
			log.Fatal(err)
		}
		if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("where?")}); err != nil {
			log.Fatal(err)
		}
		c, err := ep.Config().RecvCQ.Poll(ctx)
		if err != nil {
			log.Fatal(err)
		}
		stag, to := binary.BigEndian.Uint32(buf), binary.BigEndian.Uint64(buf[4:c.Length])

		// RDMA Write, then an RDMA Read of the same octets into a local sink.
		if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: []byte("placed by RDMA Write"), RemoteSTag: stag, RemoteTO: to}); err != nil {
			log.Fatal(err)
		}
		sink, err := pd.Register(make([]byte, 20), rdmap.LocalWrite)
		if err != nil {
			log.Fatal(err)
		}
		// Four Reads of five octets each, posted as one list: they leave
		// together (one SCTP packet, one MPA writev) and complete in order
		// on the send CQ (RFC 5040 §5.5 rules 13, 15).
		var reads []rdmap.SendWR
		for i := range 4 {
			reads = append(reads, rdmap.SendWR{ID: uint64(i), Op: rdmap.WRRead, Sink: sink,
				SinkOffset: uint64(i) * 5, Length: 5, RemoteSTag: stag, RemoteTO: to + uint64(i)*5})
		}
		if _, err := ep.PostSend(reads...); err != nil {
			log.Fatal(err)
		}
		for range reads {
			if c, err := ep.Config().SendCQ.Poll(ctx); err != nil || c.Err != nil {
				log.Fatal(err, c.Err)
			}
		}
		// Fetch and Add on an 8-octet aligned word (RFC 7306 §5.1). The
		// advert above is this program's own format, big-endian; the
		// word is in the target's host byte order, as RFC 7306 §5.1.1
		// has it (the target sets it with rdmap.MR.PutUint64).
		firstC, _ := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: stag, RemoteTO: to + 64, Add: 5})
		first := firstC.Orig
		secondC, _ := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: stag, RemoteTO: to + 64, Add: 5})
		second := secondC.Orig
		// Write with Immediate Data: the Write is placed before the
		// Immediate Data completes a receive at the target (RFC 7306 §6).
		msg := []byte("and then immediate")
		imm := binary.BigEndian.AppendUint64(nil, uint64(len(msg)))
		if err := ep.PostRecv(2, buf); err != nil { // for the answer
			log.Fatal(err)
		}
		if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWriteImm, Local: append(imm, msg...), RemoteSTag: stag, RemoteTO: to + 128, Imm: 0xfeed, Solicited: true}); err != nil {
			log.Fatal(err)
		}
		if c, err = ep.Config().RecvCQ.Poll(ctx); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: read %q; fetch-add saw %d then %d; target says %s\n",
			llp, sink.Bytes(), first, second, buf[:c.Length])

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
	// sctp-native: read "placed by RDMA Write"; fetch-add saw 0 then 5; target says immediate 0xfeed after "and then immediate"
	// sctp-pion: read "placed by RDMA Write"; fetch-add saw 0 then 5; target says immediate 0xfeed after "and then immediate"
	// mpa: read "placed by RDMA Write"; fetch-add saw 0 then 5; target says immediate 0xfeed after "and then immediate"
}
