package transport

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// MPA start-up defaults (MPAOptions.MaxStartups, MaxStartupsPerAddress,
// StartupTimeout, FDReserve).
const (
	defaultMaxStartups           = 256
	defaultMaxStartupsPerAddress = 16
	defaultStartupTimeout        = 5 * time.Second
	defaultFDReserve             = 64
)

// Errors of MPA admission: why a TCP connection was closed (with a RST)
// before its MPA start-up.
var (
	errTooManyStartups    = errors.New("transport: too many MPA start-ups in progress")
	errTooManyFromAddress = errors.New("transport: too many MPA start-ups from this address")
	errNearFDLimit        = errors.New("transport: too close to the file descriptor limit")
)

// MPAStats count what the MPA listener's admission did with the TCP
// connections it accepted.
type MPAStats struct {
	// Admitted counts connections let into the MPA start-up; InStartup
	// those in it now; Open the accepted connections still open.
	Admitted           uint64
	InStartup, Open    int
	RefusedStartups    uint64 // at MaxStartups
	RefusedPerAddress  uint64 // at MaxStartupsPerAddress
	RefusedFDs         uint64 // within FDReserve of RLIMIT_NOFILE
	StartupTimeouts    uint64 // start-ups that did not finish within StartupTimeout
	StartupFailures    uint64 // start-ups that failed otherwise (bad frame, reset, rejected, TLS)
	TLSFailures        uint64 // of those, TLS handshakes that failed (MPAOptions.TLS)
	FDLimit, FDReserve int
}

// mpaAdmission bounds the MPA connections a listener holds before their
// peers have proved anything (RFC 5044 §7.1.2: the Responder waits for
// the MPA Request): start-ups at once, per source address, and open
// connections below the process's file descriptor limit.
type mpaAdmission struct {
	maxStartups, maxPerAddr int
	timeout                 time.Duration
	fdLimit, fdReserve      int

	mu        sync.Mutex
	inStartup int
	perAddr   map[netip.Addr]int
	open      int

	admitted, refusedStartups, refusedPerAddr, refusedFDs atomic.Uint64
	timeouts, failures                                    atomic.Uint64
}

func newMPAAdmission(o Options) *mpaAdmission {
	a := &mpaAdmission{maxStartups: o.MPA.MaxStartups, maxPerAddr: o.MPA.MaxStartupsPerAddress, timeout: o.MPA.StartupTimeout,
		fdReserve: o.MPA.FDReserve, perAddr: make(map[netip.Addr]int)}
	if a.maxStartups <= 0 {
		a.maxStartups = defaultMaxStartups
	}
	if a.maxPerAddr <= 0 {
		a.maxPerAddr = defaultMaxStartupsPerAddress
	}
	if a.timeout <= 0 {
		a.timeout = defaultStartupTimeout
	}
	if a.fdReserve <= 0 {
		a.fdReserve = defaultFDReserve
	}
	a.fdLimit = fileLimit()
	return a
}

// admit decides on a connection just accepted: nil lets it into the
// start-up (end must then be called), an error has it reset at once.
// The file descriptor check counts this listener's open connections
// against RLIMIT_NOFILE less FDReserve (the process's other descriptors
// are in the reserve).
func (a *mpaAdmission) admit(nc net.Conn) (netip.Addr, error) {
	var ip netip.Addr
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		ip = ta.AddrPort().Addr().Unmap()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.fdLimit > 0 && a.open+a.fdReserve >= a.fdLimit:
		a.refusedFDs.Add(1)
		return ip, errNearFDLimit
	case a.inStartup >= a.maxStartups:
		a.refusedStartups.Add(1)
		return ip, errTooManyStartups
	case a.perAddr[ip] >= a.maxPerAddr:
		a.refusedPerAddr.Add(1)
		return ip, errTooManyFromAddress
	}
	a.inStartup++
	a.perAddr[ip]++
	a.open++
	a.admitted.Add(1)
	return ip, nil
}

// started records the end of a start-up (the connection stays open).
func (a *mpaAdmission) started(ip netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inStartup--
	if a.perAddr[ip]--; a.perAddr[ip] <= 0 {
		delete(a.perAddr, ip)
	}
}

// closed records that an admitted connection is closed.
func (a *mpaAdmission) closed() {
	a.mu.Lock()
	a.open--
	a.mu.Unlock()
}

// refuse closes a connection with a RST (SO_LINGER 0): nothing of it is
// kept, not even a TIME_WAIT.
func refuse(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = nc.Close()
}

func (a *mpaAdmission) stats() MPAStats {
	a.mu.Lock()
	s := MPAStats{InStartup: a.inStartup, Open: a.open, FDLimit: a.fdLimit, FDReserve: a.fdReserve}
	a.mu.Unlock()
	s.Admitted, s.RefusedStartups, s.RefusedPerAddress = a.admitted.Load(), a.refusedStartups.Load(), a.refusedPerAddr.Load()
	s.RefusedFDs, s.StartupTimeouts, s.StartupFailures = a.refusedFDs.Load(), a.timeouts.Load(), a.failures.Load()
	return s
}
