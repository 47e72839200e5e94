package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"

	"github.com/sctp-rdma/sctp-rdma/internal/tcpcc"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/kernel"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// LLP names accepted by Options.LLP.
const (
	SCTPNative = "sctp-native"
	SCTPPion   = "sctp-pion"
	SCTPKernel = "sctp-kernel"
	MPA        = "mpa"
)

// LLP describes one lower layer of the registry: its Options.LLP Name, a
// Description (the CLI's --llp help and docs/cli.md), and Options, the
// fields it reads of its own group of Options (Options.Native, Pion,
// Kernel, MPA).
type LLP struct {
	Name, Description string
	Options           []string
}

// llpEntry is one row of the registry: what LLPs shows and how Dial and
// Listen set the lower layer up. Adding an LLP is adding a row (and its
// group of Options).
type llpEntry struct {
	name, description string
	// group is the name of the LLP's field of Options.
	group string
	// dial connects n streams to addr (its errors are Dial's).
	dial func(ctx context.Context, o Options, addr string, n int, pd *rdmap.PD, prepare func(*rdmap.Endpoint) error) (*Client, error)
	// listen announces on addr: the LLP's passive side (passive.go).
	listen func(o Options, addr string) (passive, error)
}

// registry lists the lower layers; the first is the default (Options.LLP
// ""), as it is the CLI's.
var registry = []llpEntry{
	{name: SCTPNative, description: "the project's own userspace SCTP over UDP (package sctp), optionally in DTLS",
		group: "Native",
		dial: func(ctx context.Context, o Options, addr string, n int, pd *rdmap.PD, prepare func(*rdmap.Endpoint) error) (*Client, error) {
			return dialAssoc(ctx, o, SCTPNative, n, pd, prepare, func() (*sctpllp.Association, error) {
				return sctpllp.Dial(ctx, addr, o.nativeConfig(n, false))
			}, addr)
		},
		listen: func(o Options, addr string) (passive, error) {
			return listenSCTP(o, addr, o.nativeConfig(0, true))
		}},
	{name: SCTPPion, description: "userspace SCTP over UDP (github.com/pion/sctp)",
		group: "Pion",
		dial: func(ctx context.Context, o Options, addr string, n int, pd *rdmap.PD, prepare func(*rdmap.Endpoint) error) (*Client, error) {
			return dialAssoc(ctx, o, SCTPPion, n, pd, prepare, func() (*sctpllp.Association, error) {
				return sctpllp.Dial(ctx, addr, o.sctpConfig(n))
			}, addr)
		},
		listen: func(o Options, addr string) (passive, error) {
			return listenSCTP(o, addr, o.sctpConfig(0))
		}},
	{name: SCTPKernel, description: "Linux kernel SCTP",
		group: "Kernel",
		dial: func(ctx context.Context, o Options, addr string, n int, pd *rdmap.PD, prepare func(*rdmap.Endpoint) error) (*Client, error) {
			return dialAssoc(ctx, o, SCTPKernel, n, pd, prepare, func() (*sctpllp.Association, error) {
				t, err := kernel.Stack(o.kernelConfig(n)).Dial(ctx, addr)
				if err != nil {
					return nil, err
				}
				return sctpllp.NewAssociation(t, sctpllp.Config{}), nil
			}, addr)
		},
		listen: listenKernel},
	{name: MPA, description: "MPA over TCP (RFC 5044, RFC 6581), optionally in TLS 1.3",
		group:  "MPA",
		dial:   dialMPAStreams,
		listen: listenMPA},
}

// LLPs returns the lower layers Options.LLP accepts, the default first.
func LLPs() []LLP {
	out := make([]LLP, len(registry))
	for i, e := range registry {
		out[i] = LLP{Name: e.name, Description: e.description, Options: e.fields()}
	}
	return out
}

// fields lists the fields of the LLP's group it reads: those whose llp tag
// names it, or every one of a group without tags.
func (e *llpEntry) fields() []string {
	g, _ := reflect.TypeFor[Options]().FieldByName(e.group)
	var out []string
	for f := range g.Type.Fields() {
		if tag, ok := f.Tag.Lookup("llp"); !ok || slices.Contains(strings.Split(tag, ","), e.name) {
			out = append(out, f.Name)
		}
	}
	return out
}

// lookupLLP returns the registry row of name ("": the default), or
// errUnknownLLP naming the accepted ones.
func lookupLLP(name string) (*llpEntry, error) {
	if name == "" {
		return &registry[0], nil
	}
	names := make([]string, len(registry))
	for i := range registry {
		if registry[i].name == name {
			return &registry[i], nil
		}
		names[i] = registry[i].name
	}
	return nil, fmt.Errorf("%w %q (want %s)", errUnknownLLP, name, strings.Join(names, ", "))
}

// dialAssoc opens the association (connect) and n streams on it: every
// SCTP lower layer's Dial.
func dialAssoc(ctx context.Context, o Options, kind string, n int, pd *rdmap.PD, prepare func(*rdmap.Endpoint) error,
	connect func() (*sctpllp.Association, error), addr string) (*Client, error) {
	assoc, err := connect()
	if err != nil {
		return nil, &DialError{LLP: kind, Addr: addr, Err: err}
	}
	if n > assoc.NumStreams()-1 {
		_ = assoc.Abort()
		return nil, fmt.Errorf("%s: %d streams requested, the association has %d", kind, n, assoc.NumStreams()-1)
	}
	c := &Client{MULPDU: assoc.MULPDU(), assoc: assoc}
	c.mgr = streams.New(assoc, pd, streams.Config{Endpoint: o.endpointConfig(), SharedCQ: o.SendCQ != nil || o.RecvCQ != nil, PrivateData: o.PrivateData})
	for i := 0; i < n; i++ {
		s, err := c.mgr.Open(ctx, uint16(i+1), streams.OpenOptions{Prepare: prepare})
		if err != nil {
			c.abort()
			var re *sctpllp.RejectError
			if errors.As(err, &re) {
				return nil, fmt.Errorf("%w: stream %d: %q", ErrRejected, i+1, re.PrivateData)
			}
			if errors.Is(err, sctpllp.ErrSessionTerminated) {
				return nil, fmt.Errorf("%w: stream %d: %w", ErrRejected, i+1, err)
			}
			return nil, fmt.Errorf("%s: open stream %d: %w", kind, i+1, err)
		}
		c.Endpoints = append(c.Endpoints, s.Endpoint)
		o.traceEnd(s.Endpoint)
	}
	return c, nil
}

// dialMPAStreams opens n MPA connections to addr, one stream each.
func dialMPAStreams(ctx context.Context, o Options, addr string, n int, pd *rdmap.PD, prepare func(*rdmap.Endpoint) error) (*Client, error) {
	c := &Client{}
	for i := 0; i < n; i++ {
		conn, err := o.dialMPA(ctx, addr)
		if err != nil {
			c.abort()
			var re *mpa.RejectError
			if errors.As(err, &re) {
				return nil, fmt.Errorf("%w: connection %d: %q", ErrRejected, i+1, re.Reply.PrivateData)
			}
			return nil, &DialError{LLP: MPA, Addr: addr, Err: err}
		}
		ep, err := newMPAEndpoint(conn, o, pd, prepare)
		if err != nil {
			c.abort()
			return nil, err
		}
		if i == 0 {
			c.MULPDU = conn.MULPDU()
		}
		c.conns = append(c.conns, conn)
		c.Endpoints = append(c.Endpoints, ep)
	}
	return c, nil
}

// listenSCTP listens with one of sctpllp's stacks (sctp-native,
// sctp-pion).
func listenSCTP(o Options, addr string, cfg sctpllp.Config) (passive, error) {
	ln, err := sctpllp.Listen(addr, cfg)
	if err != nil {
		return nil, err
	}
	return &sctpPassive{o: o, accept: ln.Accept, addrFn: ln.Addr, closer: ln.Close, handshake: ln.HandshakeStats}, nil
}

// listenKernel listens with Linux SCTP; each association it accepts gets
// the adaptation's idle timeout.
func listenKernel(o Options, addr string) (passive, error) {
	ln, err := kernel.Stack(o.kernelConfig(0)).Listen(addr)
	if err != nil {
		return nil, err
	}
	accept := func(ctx context.Context) (*sctpllp.Association, error) {
		t, err := ln.Accept(ctx)
		if err != nil {
			return nil, err
		}
		return sctpllp.NewAssociation(t, sctpllp.Config{IdleTimeout: sctpllp.DefaultIdleTimeout}), nil
	}
	return &sctpPassive{o: o, accept: accept, addrFn: func() string { return ln.Addr().String() }, closer: ln.Close}, nil
}

// listenMPA binds a TCP listener whose connections run the MPA Responder
// start-up under the admission caps (mpaadmit.go).
func listenMPA(o Options, addr string) (passive, error) {
	l := &mpaPassive{o: o, cfg: o.mpaConfig(), admit: newMPAAdmission(o)}
	l.cfg.HandshakeTimeout = l.admit.timeout
	lc := net.ListenConfig{Control: tcpcc.Control(o.MPA.TCPCongestion)}
	var err error
	l.tcp, err = lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	// Validates the configuration now rather than at the first peer.
	if _, err = mpa.NewListener(l.tcp, l.cfg); err != nil {
		_ = l.tcp.Close()
		return nil, err
	}
	return l, nil
}
