//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/netem"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// emulated is bench --emulate: a server of this process in one network
// namespace, the bench client in another, joined by an impaired link
// (internal/tools/netem).
type emulated struct {
	link   *netem.Link
	addr   string
	cancel context.CancelFunc
	done   chan error
}

// startEmulated builds the path of profile spec and starts a bench server
// with options so at its far end.
func startEmulated(spec string, so transport.Options, w io.Writer) (*emulated, error) {
	p, err := netem.ParseProfile(spec)
	if err != nil {
		return nil, usageError("--emulate %q: %v", spec, err)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("--emulate needs root: it makes two network namespaces and a TUN link between them")
	}
	l, err := netem.NewLink(p, netem.LinkOptions{TCPCongestion: so.MPA.TCPCongestion})
	if err != nil {
		return nil, err
	}
	var ln *transport.Listener
	if err := l.InA(func() (err error) {
		ln, err = transport.Listen(so, net.JoinHostPort(l.AddrA, "0"))
		return err
	}); err != nil {
		l.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &emulated{link: l, addr: ln.Addr(), cancel: cancel, done: make(chan error, 1)}
	srv := bench.NewServer(bench.ServerConfig{})
	go func() { e.done <- srv.Run(ctx, ln) }()
	fmt.Fprintf(w, "sctp-rdma bench: emulated path %v (%s link, TCP %s): server %s in namespace %s, this client in %s\n",
		p, l.Backend, l.TCPCongestion(), e.addr, l.NSA, l.NSB)
	return e, nil
}

// run runs one bench from the client's namespace (transport.Dial opens
// every socket in the calling goroutine, here on that namespace's thread).
func (e *emulated) run(ctx context.Context, c bench.Config) (res *bench.Result, err error) {
	if nerr := e.link.InB(func() error {
		res, err = bench.Run(ctx, c)
		return nil
	}); nerr != nil {
		return nil, nerr
	}
	return res, err
}

func (e *emulated) close() {
	e.cancel()
	<-e.done
	e.link.Close()
}
