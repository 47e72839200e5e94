package native

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/pionlog"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/sockbuf"

	"github.com/pion/dtls/v3"
	dtlsnet "github.com/pion/dtls/v3/pkg/net"
	"github.com/pion/transport/v5/udp"

	"github.com/sctp-rdma/sctp-rdma/sctp"
)

// SCTP over DTLS over UDP (RFC 8261, the encapsulation of WebRTC data
// channels) for the native stack: each association runs over one DTLS
// connection, so that everything above UDP, DDP headers included, is
// encrypted and authenticated (RFC 5040 §8 asks for confidentiality and
// integrity below DDP; RFC 5042 names IPsec, which this replaces for a
// userspace stack). DTLS is github.com/pion/dtls (DTLS 1.2, RFC 6347).

// Limits of SCTP over DTLS.
const (
	// dtlsOverhead is what a DTLS 1.2 record adds to a packet: the 13-octet
	// record header, and at most 48 octets of explicit nonce, MAC or tag
	// and padding for the cipher suites pion/dtls offers.
	dtlsOverhead = 13 + 48
	// dtlsMaxPacket is the largest SCTP packet over DTLS: one record's
	// plaintext (at most 2^14 octets, RFC 6347 §4.1, RFC 8261 §5) in one
	// datagram of at most 8192 octets, the most pion/dtls reads.
	dtlsMaxPacket = (8192 - dtlsOverhead) &^ 3
	// defaultDTLSHandshakeTimeout bounds a DTLS handshake and the SCTP
	// association start over it, on either side.
	defaultDTLSHandshakeTimeout = 10 * time.Second
	// maxDTLSHandshakes bounds the handshakes a listener runs at once; an
	// INIT flood over DTLS meets pion/dtls's stateless HelloVerifyRequest
	// cookie first (RFC 6347 §4.2.1).
	maxDTLSHandshakes = 256
)

// dtlsSocketBuffer is the UDP socket buffer under DTLS, each way.
const dtlsSocketBuffer = 8 << 20

// connectedPacketConn presents a connected UDP socket as the PacketConn
// pion/dtls's client takes: it writes to the one peer.
type connectedPacketConn struct{ *net.UDPConn }

// WriteTo writes to the connected peer, whatever addr says.
func (c connectedPacketConn) WriteTo(b []byte, _ net.Addr) (int, error) { return c.Write(b) }

// ErrDTLSHandshake reports a DTLS handshake that failed or timed out: the
// peer does not speak DTLS (a plain SCTP peer), or it failed
// authentication (certificate or pre-shared key).
var ErrDTLSHandshake = errors.New("sctpllp: DTLS handshake failed")

// The path MTU a DTLS association assumes when Config.MTU is unset (the
// DTLS conn hides the route: package sctp's figures for an unknown path
// and for loopback), and the accept queue when Config.Backlog is unset
// (a Listener's).
const (
	dtlsDefaultMTU     = 1500
	dtlsLoopbackMTU    = 65536
	dtlsDefaultBacklog = 128
)

// dtlsConfig is cfg for SCTP over DTLS: packets fit one DTLS record, the
// record's overhead comes out of the path MTU, and the CRC32c, which the
// record's AEAD makes redundant, is left out where the peer agrees
// (RFC 9653 §5.4: Zero Checksum Acceptable with EDMID 1).
func dtlsConfig(cfg Config, raddr net.Addr) Config {
	cfg = forDDP(cfg)
	cfg.ZeroChecksum = true
	mtu := cfg.MTU
	if mtu <= 0 {
		mtu = dtlsDefaultMTU
		if ua, ok := raddr.(*net.UDPAddr); ok && ua.IP.IsLoopback() {
			mtu = dtlsLoopbackMTU
		}
	}
	cfg.MTU = mtu - dtlsOverhead
	if cfg.MaxPacket <= 0 || cfg.MaxPacket > dtlsMaxPacket {
		cfg.MaxPacket = dtlsMaxPacket
	}
	return cfg
}

// dialDTLS starts an association of the native stack over DTLS to
// the UDP address raddr: the DTLS handshake authenticates the peer (dcfg:
// certificates or a pre-shared key), then the SCTP association starts
// inside it. A peer that does not answer the DTLS handshake (a plain SCTP
// listener) fails with ErrDTLSHandshake within the handshake timeout.
func dialDTLS(ctx context.Context, raddr string, cfg Config, dcfg *dtls.Config) (*transport, error) {
	ua, err := net.ResolveUDPAddr("udp", raddr)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	hctx, cancel := context.WithTimeout(ctx, defaultDTLSHandshakeTimeout)
	defer cancel()
	uc, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	sockbuf.SetSocketBuffers(uc, dtlsSocketBuffer)
	dc, err := dtls.Client(connectedPacketConn{uc}, ua, withSlog(dcfg))
	if err != nil {
		_ = uc.Close()
		return nil, fmt.Errorf("%w: %w", ErrDTLSHandshake, err)
	}
	if err := dc.HandshakeContext(hctx); err != nil {
		_ = dc.Close()
		if cerr := hctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", err, cerr)
		}
		return nil, fmt.Errorf("%w with %s (does it run SCTP over DTLS, with a key or certificate this end accepts?): %w", ErrDTLSHandshake, raddr, err)
	}
	c := dtlsConfig(cfg, ua)
	a, err := sctp.DialConn(hctx, dc, &c)
	if err != nil {
		return nil, nativeErr(err)
	}
	return newTransport(a, &c, true)
}

// dtlsListener accepts DTLS connections and starts an association in each.
type dtlsListener struct {
	ln     net.Listener
	cfg    Config
	accept chan *transport
	done   chan struct{}
	ctx    context.Context // canceled by close: ends handshakes under way
	cancel context.CancelFunc
	sem    chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	handshakes, failed atomic.Uint64
}

// listenDTLS listens for SCTP over DTLS on the UDP address laddr.
// Each DTLS connection that completes its handshake (authenticated by
// dcfg) carries one association, started by the peer (RFC 9260 §5.1,
// with the same stateless State Cookie as over plain UDP).
func listenDTLS(laddr string, cfg Config, dcfg *dtls.Config) (*listener, error) {
	ua, err := net.ResolveUDPAddr("udp", laddr)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: %w", err)
	}
	// The UDP listener beneath DTLS, with the socket buffers a window of
	// SCTP needs (the stock 208 KiB drop bursts, and each loss costs a
	// retransmission); a new peer is admitted only by a DTLS handshake
	// record (content type 22, RFC 6347 §4.1).
	lc := udp.ListenConfig{ReadBufferSize: dtlsSocketBuffer, WriteBufferSize: dtlsSocketBuffer,
		AcceptFilter: func(p []byte) bool { return len(p) >= 13 && p[0] == 22 }}
	inner, err := lc.Listen("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("sctpllp: DTLS listen: %w", err)
	}
	ln, err := dtls.NewListener(dtlsnet.PacketListenerFromListener(inner), withSlog(dcfg))
	if err != nil {
		_ = inner.Close()
		return nil, fmt.Errorf("sctpllp: DTLS listen: %w", err)
	}
	backlog := cfg.Backlog
	if backlog <= 0 {
		backlog = dtlsDefaultBacklog
	}
	d := &dtlsListener{ln: ln, cfg: cfg, accept: make(chan *transport, backlog),
		done: make(chan struct{}), sem: make(chan struct{}, maxDTLSHandshakes)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.wg.Add(1)
	go d.loop()
	return &listener{dl: d, cfg: cfg}, nil
}

func (d *dtlsListener) loop() {
	defer d.wg.Done()
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return
		}
		select {
		case d.sem <- struct{}{}:
		default:
			d.failed.Add(1) // too many handshakes at once
			_ = c.Close()
			continue
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer func() { <-d.sem }()
			d.serve(c)
		}()
	}
}

// serve runs the DTLS handshake and the association start on c.
func (d *dtlsListener) serve(c net.Conn) {
	ctx, cancel := context.WithTimeout(d.ctx, defaultDTLSHandshakeTimeout)
	defer cancel()
	dc, ok := c.(*dtls.Conn)
	if !ok {
		_ = c.Close()
		return
	}
	if err := dc.HandshakeContext(ctx); err != nil {
		d.failed.Add(1)
		_ = dc.Close()
		return
	}
	d.handshakes.Add(1)
	cfg := dtlsConfig(d.cfg, dc.RemoteAddr())
	a, err := sctp.AcceptConn(ctx, dc, &cfg)
	if err != nil {
		d.failed.Add(1)
		return
	}
	t, err := newTransport(a, &cfg, false)
	if err != nil {
		return
	}
	select {
	case d.accept <- t:
	case <-d.done:
		_ = t.Abort()
	default:
		_ = t.Abort() // backlog full
	}
}

func (d *dtlsListener) close() error {
	var err error
	d.once.Do(func() {
		close(d.done)
		d.cancel()
		err = d.ln.Close()
		d.wg.Wait()
		for {
			select {
			case t := <-d.accept:
				_ = t.Abort()
				continue
			default:
			}
			break
		}
	})
	return err
}

// withSlog returns dcfg, or a copy of it whose pion/dtls log lines go
// through log/slog's default logger when it names no LoggerFactory.
func withSlog(dcfg *dtls.Config) *dtls.Config {
	if dcfg == nil || dcfg.LoggerFactory != nil {
		return dcfg
	}
	c := *dcfg
	c.LoggerFactory = pionlog.Factory(nil)
	return &c
}
