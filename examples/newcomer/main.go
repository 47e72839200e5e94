// Command newcomer is the program a new user writes from the README and
// go doc: a server made of transport.HandlerFuncs and a client that opens
// four DDP streams and, on each, asks for the server's buffer, then RDMA
// Writes, Reads it back, adds atomically and Writes with Immediate Data.
// examples/newcomer's test runs it over every userspace LLP, so that the
// API a newcomer meets first keeps building and working.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

func main() {
	llp := flag.String("llp", transport.SCTPNative, "lower layer: sctp-native, sctp-pion or mpa")
	streams := flag.Int("streams", 4, "DDP streams to open")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, *llp, *streams, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "newcomer:", err)
		os.Exit(1)
	}
}

// Offsets in each stream's 4 KiB target region.
const (
	textAt    = 0   // what the client Writes and Reads back
	counterAt = 64  // the atomic counter: 8-octet aligned (RFC 7306 §5.1)
	immAt     = 128 // what the Write with Immediate Data places
)

// server registers a region per stream and answers two messages: "where?"
// with the region's STag, tagged offset and length (advert), and the
// Immediate Data of a Write with Immediate with what that Write placed.
func server() transport.Handler {
	var mu sync.Mutex
	regions := map[*rdmap.Endpoint]*rdmap.MR{}
	return &transport.HandlerFuncs{
		OnPrepare: func(ep *rdmap.Endpoint) error {
			mr, err := ep.PD().Register(make([]byte, 4096), rdmap.RemoteRead|rdmap.RemoteWrite|rdmap.RemoteAtomic)
			if err != nil {
				return err
			}
			mu.Lock()
			regions[ep] = mr
			mu.Unlock()
			// Receives are posted before the client can send (RFC 5041
			// §7.1: an untagged message without a buffer is an error).
			if err := ep.PostRecv(1, make([]byte, 64)); err != nil {
				return err
			}
			return ep.PostRecv(2, make([]byte, 8))
		},
		OnServe: func(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
			mu.Lock()
			mr := regions[ep]
			delete(regions, ep)
			mu.Unlock()
			if _, err := ep.Config().RecvCQ.Poll(ctx); err != nil { // "where?"
				return
			}
			if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: advert(mr)}); err != nil {
				return
			}
			c, err := ep.Config().RecvCQ.Poll(ctx) // the Immediate Data (RFC 7306 §6)
			if err != nil || !c.HasImm {
				return
			}
			n := min(c.Imm, 64)
			_, _ = ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte(fmt.Sprintf("imm %d: %s", c.Imm, mr.Bytes()[immAt:immAt+n]))})
			<-ep.Done() // until the client closes
		},
	}
}

// advertLen is the length of the answer to "where?": the region's STag,
// Tagged Offset and length, big-endian (RFC 5040 leaves the format to the
// ULP; this is the one the project's tools use, internal/tools/workload's
// Region).
const advertLen = 20

// advert is the answer to "where?" for mr.
func advert(mr *rdmap.MR) []byte {
	b := binary.BigEndian.AppendUint32(nil, mr.STag())
	b = binary.BigEndian.AppendUint64(b, mr.BaseTO())
	return binary.BigEndian.AppendUint64(b, uint64(len(mr.Bytes())))
}

// parseAdvert reads the answer to "where?".
func parseAdvert(b []byte) (stag uint32, to, size uint64, err error) {
	if len(b) != advertLen {
		return 0, 0, 0, fmt.Errorf("advert of %d octets, want %d", len(b), advertLen)
	}
	return binary.BigEndian.Uint32(b), binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:]), nil
}

// run serves on a loopback port, dials it with n streams and runs every
// operation on each, writing one line per stream to w.
func run(ctx context.Context, llp string, n int, w io.Writer) error {
	dev := new(rdmap.Device)
	o := transport.Options{LLP: llp}
	ln, err := transport.Listen(o, "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ln.Serve(sctx, dev.AllocPD(), server()) }()
	defer func() {
		stop()
		<-served
	}()

	pd := dev.AllocPD()
	cl, err := transport.Dial(ctx, o, ln.Addr(), n, pd, nil)
	if err != nil {
		return err
	}
	var errs []error
	for i, ep := range cl.Endpoints {
		line, err := useStream(ctx, pd, ep, i)
		if err != nil {
			errs = append(errs, fmt.Errorf("stream %d: %w", i, err))
			continue
		}
		fmt.Fprintln(w, line)
	}
	errs = append(errs, cl.Close(ctx))
	return errors.Join(errs...)
}

// useStream asks where the server's region is, then Writes, Reads back,
// adds twice atomically and Writes with Immediate Data.
func useStream(ctx context.Context, pd *rdmap.PD, ep *rdmap.Endpoint, i int) (string, error) {
	buf := make([]byte, 64)
	if err := ep.PostRecv(1, buf); err != nil {
		return "", err
	}
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("where?")}); err != nil {
		return "", err
	}
	c, err := ep.Config().RecvCQ.Poll(ctx)
	if err != nil {
		return "", err
	}
	stag, to, size, err := parseAdvert(buf[:c.Length])
	if err != nil {
		return "", err
	}
	if size < immAt+64 {
		return "", fmt.Errorf("the server's region holds %d octets, want %d", size, immAt+64)
	}

	text := []byte(fmt.Sprintf("hello from stream %d", i))
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: text, RemoteSTag: stag, RemoteTO: to + textAt}); err != nil {
		return "", fmt.Errorf("write: %w", err)
	}
	sink, err := pd.Register(make([]byte, len(text)), rdmap.LocalWrite)
	if err != nil {
		return "", err
	}
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: sink, Length: uint32(len(text)), RemoteSTag: stag, RemoteTO: to + textAt}); err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	// The counter is in the server's host byte order (RFC 7306 §5.1.1);
	// FetchAdd returns what it held before the addition.
	firstC, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: stag, RemoteTO: to + counterAt, Add: 5})
	first := firstC.Orig
	if err != nil {
		return "", fmt.Errorf("fetchadd: %w", err)
	}
	secondC, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: stag, RemoteTO: to + counterAt, Add: 5})
	second := secondC.Orig
	if err != nil {
		return "", fmt.Errorf("fetchadd: %w", err)
	}
	if err := ep.PostRecv(2, buf); err != nil { // for the answer
		return "", err
	}
	placed := []byte("after the write")
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWriteImm, Local: placed, RemoteSTag: stag, RemoteTO: to + immAt, Imm: uint64(len(placed))}); err != nil {
		return "", fmt.Errorf("write with immediate: %w", err)
	}
	if c, err = ep.Config().RecvCQ.Poll(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("stream %d: read %q, fetchadd %d then %d, %s", i, sink.Bytes(), first, second, buf[:c.Length]), nil
}
