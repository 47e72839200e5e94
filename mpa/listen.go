package mpa

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Listener accepts TCP connections and runs the MPA Responder startup on
// each (RFC 5044 §7.1.4.2: the passive side listens, then enables MPA in
// Responder mode).
type Listener struct {
	ln  net.Listener
	cfg Config
}

// Listen announces on the local network address (network "tcp", "tcp4" or
// "tcp6") for MPA Initiators.
func Listen(network, addr string, cfg *Config) (*Listener, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("mpa: listen: %w", err)
	}
	return &Listener{ln: ln, cfg: *cfg}, nil
}

// NewListener wraps an existing TCP listener.
func NewListener(ln net.Listener, cfg *Config) (*Listener, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	return &Listener{ln: ln, cfg: *cfg}, nil
}

// Addr returns the listening address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close stops listening. Connections already returned are not affected.
func (l *Listener) Close() error { return l.ln.Close() }

// Accept waits for the next TCP connection and runs Server on it. A
// failed startup (see Server) is returned with that TCP connection closed;
// the Listener stays usable. ctx bounds both the wait and the startup.
// Startups run one at a time, each bounded by Config.HandshakeTimeout; a
// server that must not let one slow Initiator delay the next accepts from
// its own net.Listener and calls Server in a goroutine per connection.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	type deadliner interface{ SetDeadline(time.Time) error }
	if dl, ok := l.ln.(deadliner); ok {
		if d, has := ctx.Deadline(); has {
			_ = dl.SetDeadline(d)
		}
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			defer close(fired)
			_ = dl.SetDeadline(time.Unix(1, 0))
		})
		defer func() {
			if !stop() {
				<-fired
			}
			_ = dl.SetDeadline(time.Time{})
		}()
	}
	nc, err := l.ln.Accept()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("mpa: accept: %w (%w)", cerr, err)
		}
		return nil, fmt.Errorf("mpa: accept: %w", err)
	}
	c, err := Server(ctx, nc, &l.cfg)
	if err != nil {
		_ = nc.Close() // the Listener owns nc: also after a rejection
		return nil, err
	}
	return c, nil
}
