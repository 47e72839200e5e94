// Package transport turns a lower layer name and an address into running
// RDMAP endpoints, the same way for every LLP (RFC 5040 §6.1): Dial opens n
// Streams to a peer and starts an rdmap.Endpoint on each; Listen and Serve
// accept streams and hand each started endpoint to a Handler.
//
// The LLPs (LLPs, one registry row each): sctp-native (the project's own
// SCTP over UDP, optionally in DTLS; the default, as the CLI's), sctp-pion
// (github.com/pion/sctp) and sctp-kernel (Linux SCTP), each one DDP stream
// per SCTP stream pair (RFC 5043); mpa, one TCP connection per stream (RFC
// 5044/6581), in TLS 1.3 if asked.
package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/iwarp"

	"github.com/pion/dtls/v3"

	"github.com/sctp-rdma/sctp-rdma/capture"
	"github.com/sctp-rdma/sctp-rdma/internal/rdmapconf"
	"github.com/sctp-rdma/sctp-rdma/internal/tcpcc"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/kernel"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
	"github.com/sctp-rdma/sctp-rdma/streams"
	"github.com/sctp-rdma/sctp-rdma/trace"
)

// errUnknownLLP reports an Options.LLP that is none of LLPs' names.
var errUnknownLLP = errors.New("transport: unknown lower layer")

// errTLSHandshake reports an MPA connection whose TLS handshake failed:
// the peer does not speak TLS (a plain MPA listener), or authentication
// failed.
var errTLSHandshake = errors.New("transport: TLS handshake failed")

// ErrRejected is wrapped by every error caused by the peer refusing a
// stream (RFC 5043 §6.3 Reject, RFC 5044 §7.1.2 rule 3 rejecting Reply).
var ErrRejected = errors.New("transport: peer rejected the session")

// The end-of-peer errors: what an endpoint's error (Endpoint.Err) and its
// flushed completions wrap when the peer went away, the same over every
// LLP. A peer where nothing listens is Dial's *DialError with
// syscall.ECONNREFUSED.
var (
	// ErrPeerClosed: the peer closed the stream gracefully (RFC 5040
	// §6.2: session close and SHUTDOWN over SCTP, a FIN over MPA), as a
	// Listener does with every stream when its Serve's context ends.
	ErrPeerClosed = rdmap.ErrPeerClosed
	// ErrPeerAborted: the stream ended without a graceful close: the
	// peer's Terminate, SCTP ABORT or TCP RST; its process died (over UDP
	// the ICMP port unreachable, errors.Is syscall.ECONNREFUSED as well);
	// or it stopped answering (sctpllp/backend.ErrPeerUnresponsive).
	ErrPeerAborted = llp.ErrAborted
)

// DialError is Dial's error when the lower layer could not be set up to
// the peer: the TCP connection or MPA negotiation (mpa), the association
// (sctp-*). Err is the lower layer's cause; a peer where nothing listens
// shows as errors.Is(err, syscall.ECONNREFUSED) over every LLP (TCP's
// RST, the ICMP port unreachable that ends an SCTP-over-UDP association,
// RFC 6951 §5.5; the kernel's ABORT).
type DialError struct {
	// LLP is the lower layer's name, Addr the peer's address.
	LLP, Addr string
	Err       error
}

// Error implements error.
func (e *DialError) Error() string { return e.LLP + ": connect " + e.Addr + ": " + e.Err.Error() }

// Unwrap returns the lower layer's cause.
func (e *DialError) Unwrap() error { return e.Err }

// Options configure both ends. Zero fields take defaults. The fields at
// the top are read by every LLP; Native, Pion, Kernel and MPA are one
// LLP's each, and only the group of the LLP named is read.
type Options struct {
	// LLP is one of LLPs' names: SCTPNative (the project's own userspace
	// SCTP, package sctp; "" means it, as for the CLI), SCTPPion,
	// SCTPKernel, MPA.
	LLP string
	// IRD and ORD are this end's wishes, negotiated per stream by RFC 6581
	// (MPA enhanced Request/Reply, SCTP Enhanced Initiate/Accept). 0:
	// iwarp.DefaultIRD and DefaultORD, the CLI's --ird and --ord.
	IRD, ORD int
	// PrivateData is sent with every Initiate / MPA Request or Reply.
	PrivateData []byte
	// SQDepth and RQDepth size the endpoints' queues (0: rdmap defaults).
	SQDepth, RQDepth int
	// SendCQ and RecvCQ, when set, are shared by the endpoints of every
	// stream (rdmap.EndpointConfig.SendCQ/RecvCQ): one goroutine polling
	// one CQ can drive thousands of streams, as one verbs thread drives
	// many QPs on one CQ. A completion's WRID then has to tell the
	// Streams apart. nil: each endpoint has its own.
	SendCQ, RecvCQ *rdmap.CQ
	// Capture, if not nil, records every packet of every LLP to a pcapng
	// file (package capture): sctp-pion's and sctp-native's UDP datagrams,
	// MPA's TCP byte streams as segments, sctp-kernel's messages as SCTP
	// DATA chunks.
	Capture *capture.Writer
	// Trace, if not nil, receives the protocol trace (package trace):
	// every stream's end (a Terminate sent or received, or a close) over
	// every LLP, and for sctp-native each association's SACKs with cwnd,
	// flight and RTO, its T3-rtx expiries and its end. The caller closes
	// it after Dial's client or Serve is done.
	Trace *trace.Writer

	Native SCTPOptions // sctp-native's
	Pion   SCTPOptions // sctp-pion's
	Kernel SCTPOptions // sctp-kernel's
	MPA    MPAOptions  // mpa's
}

// SCTPOptions are the SCTP LLPs' Options (Options.Native, Pion and
// Kernel). Each LLP reads the fields whose llp tag names it (LLP.Options
// lists them) and ignores the others.
type SCTPOptions struct {
	// MTU is the path MTU. sctp-native: 0 is the loopback MTU to a
	// loopback address, else probed (RFC 8899); sctp-pion: 0 is
	// 8192-octet packets on loopback, else 1500.
	MTU int `llp:"sctp-native,sctp-pion"`
	// Streams is the number of SCTP streams. sctp-native: offered in each
	// direction (0: the stack's default, at least enough for the dialled
	// streams; up to 65535); sctp-pion: accepted (pion.Config.Streams; its
	// INIT always offers 65535); sctp-kernel: offered in each direction
	// (0: 64, at least enough for the dialled streams).
	Streams int `llp:"sctp-native,sctp-pion,sctp-kernel"`
	// AllowMissingAdaptation accepts peers that send no DDP Adaptation
	// Layer Indication (RFC 5043 §5.1); by default it is sent and required.
	AllowMissingAdaptation bool `llp:"sctp-native,sctp-pion,sctp-kernel"`
	// LocalAddr, for Dial, is the local IP address to connect from (empty:
	// the system's choice). sctp-native's and sctp-kernel's may name
	// several, "ip1/ip2": a multi-homed endpoint (RFC 9260 §6.4; sctp.Config
	// and kernel.Config.LocalAddr); Listen's and Dial's address may
	// likewise be "ip1/ip2:port".
	LocalAddr string `llp:"sctp-native,sctp-pion,sctp-kernel"`
	// DTLS runs every association inside DTLS (RFC 8261): the same
	// configuration serves Dial (client side) and Listen (server side);
	// nil: in the clear.
	DTLS *dtls.Config `llp:"sctp-native"`
	// CongestionControl is each association's: "cubic" (RFC 9438) or
	// "rfc9260" (RFC 9260 §7.2); "": native.DefaultCongestionControl.
	CongestionControl string `llp:"sctp-native"`
	// NoOffload sends and receives every packet with its own system call
	// (sctp.Config.NoOffload: UDP_SEGMENT and UDP_GRO off).
	NoOffload bool `llp:"sctp-native"`
}

// MPAOptions are mpa's Options.
type MPAOptions struct {
	// LocalAddr, for Dial, is the local IP address to connect from.
	LocalAddr string
	// TLS runs every MPA connection inside TLS (crypto/tls; TLS 1.3
	// unless the configuration allows less); nil: in the clear.
	TLS *tls.Config
	// TCPCongestion is each TCP connection's congestion control (Linux
	// TCP_CONGESTION, e.g. "cubic", "bbr"; "": the system's). One missing
	// from net.ipv4.tcp_allowed_congestion_control needs CAP_NET_ADMIN.
	TCPCongestion string
	// MaxStartups, MaxStartupsPerAddress, StartupTimeout and FDReserve
	// bound a listener's connections before their MPA Request
	// (mpaadmit.go; 0: 256, 16, 5 s and 64).
	MaxStartups, MaxStartupsPerAddress int
	StartupTimeout                     time.Duration
	FDReserve                          int
}

func (o Options) endpointConfig() rdmap.EndpointConfig {
	return rdmap.EndpointConfig{IRD: o.IRD, ORD: o.ORD, SQDepth: o.SQDepth, RQDepth: o.RQDepth, SendCQ: o.SendCQ, RecvCQ: o.RecvCQ}
}

// sctpConfig is the sctp-pion configuration for an association that
// carries n streams (0 for a listener): Streams, or pion.DefaultStreams,
// raised to n+1 when the dialled streams need more (as for sctp-native).
func (o Options) sctpConfig(n int) sctpllp.Config {
	s := o.Pion.Streams
	if s != 0 || n+1 > pion.DefaultStreams {
		s = max(s, n+1)
	}
	return sctpllp.Config{Stack: pion.Stack(pion.Config{MTU: o.Pion.MTU, Streams: s, AllowMissingAdaptation: o.Pion.AllowMissingAdaptation, Capture: o.Capture,
		LocalAddr: o.Pion.LocalAddr})}
}

func (o Options) nativeConfig(n int, server bool) sctpllp.Config {
	s := o.Native.Streams
	if s != 0 {
		s = max(s, n+1)
	}
	ncfg := native.Config{MTU: o.Native.MTU, Streams: s, AllowMissingAdaptation: o.Native.AllowMissingAdaptation,
		CongestionControl: o.Native.CongestionControl, NoOffload: o.Native.NoOffload}
	if o.Native.LocalAddr != "" && !server {
		ncfg.LocalAddr = o.Native.LocalAddr + ":0" // "ip" or, multi-homed, "ip1/ip2"
	}
	if o.Capture != nil {
		ncfg.Tap = o.Capture.SCTPOverUDPTap(server)
	}
	if o.Trace != nil {
		ncfg.Tracer = o.Trace
	}
	return sctpllp.Config{Stack: native.Stack(ncfg, o.Native.DTLS)}
}

func (o Options) kernelConfig(n int) kernel.Config {
	s := o.Kernel.Streams
	if s == 0 {
		s = max(64, n+1)
	}
	kc := kernel.Config{Streams: s, AllowMissingAdaptation: o.Kernel.AllowMissingAdaptation, Capture: o.Capture}
	if o.Kernel.LocalAddr != "" {
		kc.LocalAddr = o.Kernel.LocalAddr + ":0" // "ip" or, multi-homed, "ip1/ip2"
	}
	return kc
}

func (o Options) mpaConfig() *mpa.Config {
	ird, ord := o.IRD, o.ORD
	if ird <= 0 {
		ird = iwarp.DefaultIRD
	}
	if ord <= 0 {
		ord = iwarp.DefaultORD
	}
	// Inside TLS each record's AEAD tag already protects the FPDUs more
	// strongly than CRC32c (RFC 5044 §4.4 (2a)): this end asks for none;
	// a peer that asks still gets them.
	return &mpa.Config{Enhanced: true, IRD: uint16(min(ird, iwarp.MaxIRD)), ORD: uint16(min(ord, iwarp.MaxIRD)), PrivateData: o.PrivateData,
		NoCRC: o.MPA.TLS != nil}
}

// Client is the active side: a set of running endpoints to one peer.
type Client struct {
	// Endpoints are the streams in the order they were opened.
	Endpoints []*rdmap.Endpoint
	// MULPDU is the first stream's MULPDU, for reports.
	MULPDU int

	mgr   *streams.Manager
	assoc *sctpllp.Association
	conns []*mpa.Conn
}

// Dial opens n streams to addr over o.LLP and starts an endpoint of pd on
// each, calling prepare (if not nil) on each after it was created and
// before it starts receiving: the place to post the first receive buffers
// (RFC 5041 §7.1: a Send that finds no buffer is an error). On error
// everything opened is torn down.
func Dial(ctx context.Context, o Options, addr string, n int, pd *rdmap.PD, prepare func(*rdmap.Endpoint) error) (*Client, error) {
	e, err := lookupLLP(o.LLP)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("transport: %d streams requested", n)
	}
	return e.dial(ctx, o, addr, n, pd, prepare)
}

// dialMPA is mpa.Dial, with the TCP connection recorded if o.Capture.
func (o Options) dialMPA(ctx context.Context, addr string) (*mpa.Conn, error) {
	if o.Capture == nil && o.MPA.LocalAddr == "" && o.MPA.TLS == nil && o.MPA.TCPCongestion == "" {
		return mpa.Dial(ctx, "tcp", addr, o.mpaConfig())
	}
	d := net.Dialer{Control: tcpcc.Control(o.MPA.TCPCongestion)}
	if o.MPA.LocalAddr != "" {
		ip, err := netip.ParseAddr(o.MPA.LocalAddr)
		if err != nil {
			return nil, fmt.Errorf("mpa: local address: %w", err)
		}
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, 0))
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mpa: dial: %w", err)
	}
	rc := nc
	if o.Capture != nil {
		rc = o.Capture.Conn(nc, true)
	}
	if o.MPA.TLS != nil {
		tc := tlsClient(rc, o.MPA.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = rc.Close()
			return nil, fmt.Errorf("%w with %s (does it run MPA over TLS, with a certificate this end trusts?): %w", errTLSHandshake, addr, err)
		}
		rc = tc
	}
	c, err := mpa.Client(ctx, rc, o.mpaConfig())
	if err != nil {
		_ = rc.Close()
		if o.MPA.TLS != nil && strings.Contains(err.Error(), "remote error: tls:") {
			// TLS 1.3: the server judges the client's certificate after
			// the client's side of the handshake is done; its alert
			// arrives on the first read.
			return nil, fmt.Errorf("%w with %s: the server refused this end's certificate: %w", errTLSHandshake, addr, err)
		}
		return nil, err
	}
	return c, nil
}

// newMPAEndpoint makes the endpoint on an MPA connection with the IRD/ORD
// negotiated by the RFC 6581 §9.1 exchange. A negotiated 0 stays 0 (a
// Responder IRD of 0 allows the Initiator no RDMA Read: its endpoint
// refuses to post one); 0x3FFF leaves the Options value.
func newMPAEndpoint(conn *mpa.Conn, o Options, pd *rdmap.PD, prepare func(*rdmap.Endpoint) error) (*rdmap.Endpoint, error) {
	p := conn.Params()
	cfg := o.endpointConfig()
	rdmapconf.Apply(&cfg, p.Initiator, p.Depths(), p.PeerToPeer, p.RTR)
	ep, err := pd.NewEndpoint(conn, cfg)
	if err != nil {
		_ = conn.Abort()
		return nil, fmt.Errorf("mpa: endpoint: %w", err)
	}
	if prepare != nil {
		if err := prepare(ep); err != nil {
			_ = ep.Abort()
			return nil, err
		}
	}
	if err := ep.Start(); err != nil {
		_ = ep.Abort()
		return nil, fmt.Errorf("mpa: start endpoint: %w", err)
	}
	o.traceEnd(ep)
	return ep, nil
}

// traceEnd records the end of ep's stream in o.Trace, if set.
func (o Options) traceEnd(ep *rdmap.Endpoint) {
	if o.Trace == nil {
		return
	}
	rdmapconf.AfterDone(ep, func() { o.Trace.StreamEnded(ep.LLPInfo(), ep.Err()) })
}

// Abort tears every stream and connection down at once (SCTP ABORT, TCP
// RST), without waiting for the peer.
func (c *Client) Abort() { c.abort() }

// AssocStats returns the counters of the client's SCTP association (its
// SCTP stack's retransmissions, round trip and paths among them); ok is
// false over MPA, which has none.
func (c *Client) AssocStats() (s sctpllp.AssocStats, ok bool) {
	if c.assoc == nil {
		return s, false
	}
	return c.assoc.Stats(), true
}

func (c *Client) abort() {
	for _, ep := range c.Endpoints {
		_ = ep.Abort()
	}
	if c.mgr == nil {
		for _, ep := range c.Endpoints {
			<-ep.Done()
		}
	}
	if c.mgr != nil {
		// The association's ABORT first: a graceful close of the streams
		// would wait for a peer that may be frozen or gone.
		_ = c.assoc.Abort()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.mgr.Close(ctx)
		cancel()
	}
}

// Close closes every endpoint gracefully (RFC 5040 §6.2), bounded by ctx
// (what is still busy then is aborted and flushed), then the association,
// and waits until every goroutine has ended.
func (c *Client) Close(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ep.Close(ctx); err != nil && !errors.Is(err, rdmap.ErrClosed) && !errors.Is(err, rdmap.ErrPeerClosed) {
				errs[i] = err
			}
			<-ep.Done()
		}()
	}
	wg.Wait()
	if c.mgr != nil {
		if err := c.mgr.Close(ctx); err != nil && ctx.Err() == nil {
			errs = append(errs, err)
		}
		select {
		case <-c.assoc.Done():
		case <-ctx.Done():
			_ = c.assoc.Abort()
		}
	}
	return errors.Join(errs...)
}

// Handler serves one accepted stream on the passive side.
type Handler interface {
	// Admit decides on a stream request from peer (the IP address of the
	// association or connection) and its private data: a non-nil error
	// rejects it (RFC 5043 §6.3, RFC 5044 §7.1.2) with the error's text as
	// private data.
	Admit(peer netip.Addr, privateData []byte) error
	// Prepare posts the first receives of a new endpoint.
	Prepare(ep *rdmap.Endpoint) error
	// Serve runs the stream admitted for peer until it ends. It must
	// return soon after ctx ends.
	Serve(ctx context.Context, peer netip.Addr, ep *rdmap.Endpoint)
	// Dropped reports a stream admitted for peer whose set-up failed
	// before Serve (the endpoint could not be created, prepared or
	// started).
	Dropped(peer netip.Addr)
}

// Starter is a Handler whose streams need no goroutine while idle: the
// Listener calls Start instead of Serve. Start returns at once; the stream
// lives until the handler closes or aborts its endpoint (when Serve's
// context ends the Listener closes the streams left, aborting those that
// do not finish within 2 s). Where Serve would block waiting for the peer,
// a Starter registers for it (a handler on the stream's CQ,
// rdmap.CQ.SetHandler) and runs only while the stream has work.
type Starter interface {
	// Thousands of idle streams then cost their state and no stacks. Over
	// SCTP the Listener keeps no goroutine per Starter stream either; over
	// MPA every stream is a TCP connection with a reader goroutine anyway.
	Handler
	Start(ctx context.Context, peer netip.Addr, ep *rdmap.Endpoint)
}

// peerIP returns the IP address of a transport address: a UDP or TCP
// address, or the first address of a multi-homed SCTP one ("ip1/ip2:port").
func peerIP(a net.Addr) netip.Addr {
	switch v := a.(type) {
	case *net.UDPAddr:
		return v.AddrPort().Addr().Unmap()
	case *net.TCPAddr:
		return v.AddrPort().Addr().Unmap()
	case nil:
		return netip.Addr{}
	}
	host := a.String()
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		host = host[:i]
	}
	host, _, _ = strings.Cut(host, "/")
	ip, _ := netip.ParseAddr(strings.Trim(host, "[]"))
	return ip.Unmap()
}

// Listener is the passive side: it accepts associations (or TCP
// connections) from any number of peers concurrently.
type Listener struct {
	kind string
	// p is the LLP's listening side, made by its registry row
	// (passive.go): Serve, Addr, Close and Stats reach the LLP only
	// through it.
	p passive
}

// Listen announces on addr over o.LLP.
func Listen(o Options, addr string) (*Listener, error) {
	e, err := lookupLLP(o.LLP)
	if err != nil {
		return nil, err
	}
	p, err := e.listen(o, addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen %s: %w", e.name, addr, err)
	}
	return &Listener{kind: e.name, p: p}, nil
}

func rejectData(err error) []byte {
	b := []byte(err.Error())
	return b[:min(len(b), 200)]
}

// Addr returns the address the listener is bound to.
func (l *Listener) Addr() string { return l.p.addr() }

// Serve accepts streams until ctx ends, runs h on each with an endpoint of
// PD, then closes the listener and waits for every handler, stream and
// association to finish. It returns nil after ctx ended, or the listener's
// failure.
func (l *Listener) Serve(ctx context.Context, pd *rdmap.PD, h Handler) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer l.p.close()
	return l.p.serve(ctx, pd, h, &wg)
}

// closeEndpoint ends a stream whose handler returned: gracefully (RFC 5040
// §6.2), so that the peer learns ErrPeerClosed rather than a Terminate,
// aborting it if that takes more than 2 s (a peer that stopped answering).
func closeEndpoint(ep *rdmap.Endpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = ep.Close(ctx)
	cancel()
	_ = ep.Abort()
	<-ep.Done()
}

// Close stops accepting; Serve returns when its handlers have finished.
func (l *Listener) Close() error {
	l.p.close()
	return nil
}
