package siw

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/rdmapconf"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// InfoLen is the size of rping's advertisement (struct rping_rdma_info in
// rdma-core librdmacm/examples/rping.c): buffer address (64 bits), rkey
// (STag, 32 bits) and size (32 bits), big-endian. Every rping Send carries
// exactly this many octets; rping rejects any other receive length.
const InfoLen = 16

// DefaultSize is rping's default buffer size (-S).
const DefaultSize = 64

// Info is rping's buffer advertisement.
type Info struct {
	// Addr is the Tagged Offset of the buffer's first octet (a virtual
	// address for siw).
	Addr uint64
	// STag is the buffer's rkey.
	STag uint32
	// Size is the buffer length.
	Size uint32
}

// ErrInfoLength: a Send whose length is not InfoLen.
var ErrInfoLength = errors.New("siw: rping message is not 16 octets")

// ErrData: the data an rping iteration moved differs from what was sent.
var ErrData = errors.New("siw: rping data mismatch")

// ParseInfo decodes an rping advertisement.
func ParseInfo(b []byte) (Info, int, error) {
	if len(b) != InfoLen {
		return Info{}, 0, fmt.Errorf("%w: %d", ErrInfoLength, len(b))
	}
	return Info{Addr: binary.BigEndian.Uint64(b), STag: binary.BigEndian.Uint32(b[8:]), Size: binary.BigEndian.Uint32(b[12:])}, InfoLen, nil
}

// Append appends the 16-octet encoding of i.
func (i Info) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, i.Addr)
	b = binary.BigEndian.AppendUint32(b, i.STag)
	return binary.BigEndian.AppendUint32(b, i.Size)
}

// Len is InfoLen.
func (Info) Len() int { return InfoLen }

// FillPing writes the payload rping's client puts in its start buffer for
// iteration ping: "rdma-ping-<ping>: " then the characters 'A'..'z'
// starting at 'A'+ping (mod 58), ending with a NUL.
func FillPing(b []byte, ping int) {
	if len(b) == 0 {
		return
	}
	prefix := "rdma-ping-" + strconv.Itoa(ping) + ": "
	n := copy(b, prefix)
	c := byte(65 + ping%58)
	for i := n; i < len(b); i++ {
		b[i] = c
		c++
		if c > 122 {
			c = 65
		}
	}
	b[len(b)-1] = 0
}

// Config configures an rping client or server.
type Config struct {
	// MPA is the MPA configuration of the connection.
	MPA mpa.Config
	// Size is the buffer size (rping -S); 0 means DefaultSize. rping needs
	// at least the length of its "rdma-ping-N: " prefix.
	Size int
	// Count is the number of iterations the client runs (rping -C); 0
	// means 1.
	Count int
	// Base is the Tagged Offset of the first registered buffer (0: a
	// page-aligned address like a virtual address).
	Base uint64
}

func (c *Config) size() int {
	if c.Size <= 0 {
		return DefaultSize
	}
	return c.Size
}

// Stats reports one rping run.
type Stats struct {
	// Iterations completed and verified.
	Iterations int
	// Bytes moved by RDMA Read and Write.
	Bytes int64
	// Elapsed from the established connection to the last iteration.
	Elapsed time.Duration
	// Params are the negotiated MPA parameters.
	Params mpa.Params
}

// EndpointConfig derives the RDMAP configuration from the negotiated MPA
// parameters: IRD and ORD (RFC 6581 §9.1; the defaults of rdmap without
// enhanced negotiation) and the RTR of the peer-to-peer model (RFC 6581
// §9.2).
func EndpointConfig(p mpa.Params) rdmap.EndpointConfig {
	var cfg rdmap.EndpointConfig
	rdmapconf.Apply(&cfg, p.Initiator, p.Depths(), p.PeerToPeer, p.RTR)
	return cfg
}

// session is one rping connection's RDMAP state.
type session struct {
	ep    *rdmap.Endpoint
	pd    *rdmap.PD
	recvs [2][]byte
	next  int
}

func newSession(c *mpa.Conn, prepare func(*session) error) (*session, error) {
	pd := new(rdmap.Device).AllocPD()
	ep, err := pd.NewEndpoint(c, EndpointConfig(c.Params()))
	if err != nil {
		_ = c.Abort()
		return nil, err
	}
	s := &session{ep: ep, pd: pd}
	// rping keeps one receive posted and reposts it from its completion
	// handler; two here, so that one is always posted.
	for i := range s.recvs {
		s.recvs[i] = make([]byte, InfoLen)
		if err := ep.PostRecv(uint64(i), s.recvs[i]); err != nil {
			_ = ep.Abort()
			return nil, err
		}
	}
	if prepare != nil {
		if err := prepare(s); err != nil {
			_ = ep.Abort()
			return nil, err
		}
	}
	if err := ep.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// recv waits for the next rping message and reposts its buffer.
func (s *session) recv(ctx context.Context) (Info, error) {
	c, err := s.ep.Config().RecvCQ.Poll(ctx)
	if err != nil {
		return Info{}, err
	}
	if c.Err != nil {
		return Info{}, c.Err
	}
	buf := s.recvs[c.WRID]
	info, _, err := ParseInfo(buf[:c.Length])
	if err != nil {
		return Info{}, err
	}
	if err := s.ep.PostRecv(c.WRID, buf); err != nil {
		return Info{}, err
	}
	return info, nil
}

func (s *session) close(ctx context.Context) error {
	err := s.ep.Close(ctx)
	<-s.ep.Done()
	return err
}

func base(cfg *Config) uint64 {
	if cfg.Base == 0 {
		return 0x7f3a_5c40_0000
	}
	return cfg.Base
}

// Client runs rping's client (rping -c -C Count -S Size -V) against addr:
// per iteration it advertises its start buffer with a Send, the server
// RDMA Reads it and answers with a Send; it advertises its RDMA buffer,
// the server RDMA Writes the data back and Sends again; the client then
// compares both buffers (rping -V). It closes the connection afterwards.
func Client(ctx context.Context, addr string, cfg Config) (Stats, error) {
	size := cfg.size()
	conn, err := dialMPA(ctx, addr, &cfg.MPA)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Params: conn.Params()}
	var startMR, rdmaMR *rdmap.MR
	s, err := newSession(conn, func(s *session) error {
		var err error
		if startMR, err = s.pd.Register(make([]byte, size), rdmap.RemoteRead, rdmap.MROption{BaseTO: base(&cfg)}, rdmap.MROption{Endpoint: s.ep}); err != nil {
			return err
		}
		rdmaMR, err = s.pd.Register(make([]byte, size), rdmap.LocalWrite|rdmap.RemoteWrite,
			rdmap.MROption{BaseTO: base(&cfg) + uint64(size+4095)&^4095}, rdmap.MROption{Endpoint: s.ep})
		return err
	})
	if err != nil {
		return st, err
	}
	startInfo := Info{Addr: base(&cfg), STag: startMR.STag(), Size: uint32(size)}
	rdmaInfo := Info{Addr: base(&cfg) + uint64(size+4095)&^4095, STag: rdmaMR.STag(), Size: uint32(size)}
	count := max(cfg.Count, 1)
	t0 := time.Now()
	runErr := func() error {
		for ping := range count {
			FillPing(startMR.Bytes(), ping)
			clear(rdmaMR.Bytes())
			if _, err := s.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: startInfo.Append(nil)}); err != nil {
				return fmt.Errorf("ping %d: advertise start buffer: %w", ping, err)
			}
			if _, err := s.recv(ctx); err != nil { // the server read it
				return fmt.Errorf("ping %d: waiting for RDMA_WRITE_ADV: %w", ping, err)
			}
			if _, err := s.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: rdmaInfo.Append(nil)}); err != nil {
				return fmt.Errorf("ping %d: advertise rdma buffer: %w", ping, err)
			}
			if _, err := s.recv(ctx); err != nil { // the server wrote it
				return fmt.Errorf("ping %d: waiting for RDMA_WRITE_COMPLETE: %w", ping, err)
			}
			if !bytes.Equal(startMR.Bytes(), rdmaMR.Bytes()) {
				return fmt.Errorf("%w: ping %d: wrote %q, got back %q", ErrData, ping, startMR.Bytes(), rdmaMR.Bytes())
			}
			st.Iterations++
			st.Bytes += 2 * int64(size)
		}
		return nil
	}()
	st.Elapsed = time.Since(t0)
	cerr := s.close(ctx)
	if runErr != nil {
		return st, runErr
	}
	if cerr != nil && !errors.Is(cerr, rdmap.ErrPeerClosed) && !errors.Is(cerr, rdmap.ErrClosed) {
		return st, fmt.Errorf("siw: closing: %w", cerr)
	}
	return st, nil
}

// Serve runs rping's server (rping -s -S Size) for one connection accepted
// from ln: per iteration it RDMA Reads the client's advertised start
// buffer, verifies rping's payload, Sends, RDMA Writes the data to the
// client's advertised RDMA buffer and Sends again, until the client
// disconnects.
func Serve(ctx context.Context, ln *mpa.Listener, cfg Config) (Stats, error) {
	size := cfg.size()
	conn, err := ln.Accept(ctx)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Params: conn.Params()}
	var sink *rdmap.MR
	s, err := newSession(conn, func(s *session) error {
		var err error
		sink, err = s.pd.Register(make([]byte, size), rdmap.LocalWrite, rdmap.MROption{BaseTO: base(&cfg)}, rdmap.MROption{Endpoint: s.ep})
		return err
	})
	if err != nil {
		return st, err
	}
	go func() { // the context ends the session
		select {
		case <-ctx.Done():
			_ = s.ep.Abort()
		case <-s.ep.Done():
		}
	}()
	zero := make([]byte, InfoLen) // rping's server never fills its send buffer
	want := make([]byte, size)
	t0 := time.Now()
	runErr := func() error {
		for ping := 0; ; ping++ {
			adv, err := s.recv(ctx)
			if err != nil {
				if ping > 0 && (errors.Is(err, rdmap.ErrPeerClosed) || errors.Is(s.ep.Err(), rdmap.ErrPeerClosed)) {
					return nil // the client disconnected after its last ping
				}
				return fmt.Errorf("ping %d: waiting for RDMA_READ_ADV: %w", ping, err)
			}
			if adv.Size > uint32(size) {
				return fmt.Errorf("ping %d: client buffer of %d octets exceeds %d", ping, adv.Size, size)
			}
			n := int(adv.Size)
			if _, err := s.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: sink, Length: adv.Size, RemoteSTag: adv.STag, RemoteTO: adv.Addr}); err != nil {
				return fmt.Errorf("ping %d: RDMA Read: %w", ping, err)
			}
			FillPing(want[:n], ping)
			if !bytes.Equal(want[:n], sink.Bytes()[:n]) {
				return fmt.Errorf("%w: ping %d: read %q, want %q", ErrData, ping, sink.Bytes()[:n], want[:n])
			}
			if _, err := s.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: zero}); err != nil {
				return fmt.Errorf("ping %d: go-ahead: %w", ping, err)
			}
			dst, err := s.recv(ctx)
			if err != nil {
				return fmt.Errorf("ping %d: waiting for RDMA_WRITE_ADV: %w", ping, err)
			}
			// rping writes strlen(data)+1 octets.
			m := bytes.IndexByte(sink.Bytes()[:n], 0) + 1
			if m == 0 {
				m = n
			}
			if uint32(m) > dst.Size {
				return fmt.Errorf("ping %d: client RDMA buffer of %d octets, %d to write", ping, dst.Size, m)
			}
			if _, err := s.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: sink.Bytes()[:m], RemoteSTag: dst.STag, RemoteTO: dst.Addr}); err != nil {
				return fmt.Errorf("ping %d: RDMA Write: %w", ping, err)
			}
			if _, err := s.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: zero}); err != nil {
				return fmt.Errorf("ping %d: write complete: %w", ping, err)
			}
			st.Iterations++
			st.Bytes += int64(n + m)
		}
	}()
	st.Elapsed = time.Since(t0)
	cerr := s.close(ctx)
	if runErr != nil {
		return st, runErr
	}
	if cerr != nil && !errors.Is(cerr, rdmap.ErrPeerClosed) && !errors.Is(cerr, rdmap.ErrClosed) {
		return st, fmt.Errorf("siw: closing: %w", cerr)
	}
	return st, nil
}
