//go:build linux

package netem

import (
	"container/heap"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/sctp-rdma/sctp-rdma/internal/netns"
)

// LinkOptions configure NewLink.
type LinkOptions struct {
	// Backend: BackendTUN, BackendKernel, or "" for the kernel's netem
	// where the kernel has it and TUN otherwise.
	Backend string
	// MTU of both ends (default 1500).
	MTU int
	// Seed of the models' random draws (0: random).
	Seed uint64
	// TCPCongestion, if set, is the TCP congestion control the link's
	// TCP should use (e.g. "cubic", "reno", "bbr"; one the kernel lists
	// in net.ipv4.tcp_available_congestion_control). It becomes both
	// namespaces' default (net.ipv4.tcp_congestion_control) where the
	// kernel lets a namespace take it: only one the host lists in
	// net.ipv4.tcp_allowed_congestion_control. Otherwise the namespaces
	// keep the host's default and each socket must ask for it
	// (TCP_CONGESTION, which root may set to any available one; see
	// Link.TCPCongestion and transport.Options.MPA.TCPCongestion).
	TCPCongestion string
	// LossOnly, if not nil, limits the profile's random loss to the IP
	// packets for which it returns true (the two directions call it
	// concurrently; it must not keep the slice): the others pass with
	// every other impairment but are never lost, counted as Exempt. For
	// experiments where one flow or one SCTP stream loses packets and
	// its neighbours do not. TUN backend only (the kernel's netem
	// cannot select).
	LossOnly func(packet []byte) bool
}

// ErrNoNetem reports BackendKernel asked for on a kernel without sch_netem.
var ErrNoNetem = errors.New("netem: this kernel has no sch_netem")

// Link joins two fresh network namespaces, A and B, by one impaired link:
// A is AddrA, B is AddrB, both in one /24. Run code that opens sockets
// in a namespace with InA and InB. Close removes everything.
type Link struct {
	NSA, NSB     string
	AddrA, AddrB string
	// Backend is the backend in use.
	Backend string
	mtu     int
	devA    string
	devB    string
	ns      [2]*namespace // A, B
	dirs    [2]*direction // A→B, B→A (TUN backend)
	files   [2]*os.File
	wg      sync.WaitGroup
	stop    chan struct{}
	closed  atomic.Bool
	// tcpCC: LinkOptions.TCPCongestion.
	tcpCC string
	// lossOnly: LinkOptions.LossOnly.
	lossOnly func([]byte) bool
}

// NewLink creates the namespaces and the link with profile p in each
// direction. It needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN).
func NewLink(p Profile, o LinkOptions) (l *Link, err error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if o.MTU == 0 {
		o.MTU = 1500
	}
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	id := hex.EncodeToString(rb[:])
	n := 10 + int(rb[0])%200
	l = &Link{NSA: "nma" + id, NSB: "nmb" + id, AddrA: fmt.Sprintf("10.%d.%d.1", n, rb[1]), AddrB: fmt.Sprintf("10.%d.%d.2", n, rb[1]),
		mtu: o.MTU, stop: make(chan struct{})}
	defer func() {
		if err != nil {
			l.Close()
			l = nil
		}
	}()
	for i, name := range []string{l.NSA, l.NSB} {
		if l.ns[i], err = newNamespace(name); err != nil {
			return l, err
		}
	}
	if o.TCPCongestion != "" {
		if err := tcpAvailable(o.TCPCongestion); err != nil {
			return l, err
		}
		l.tcpCC = o.TCPCongestion
		for _, ns := range []string{l.NSA, l.NSB} {
			err := setSysctl(ns, "net/ipv4/tcp_congestion_control", o.TCPCongestion)
			if errors.Is(err, os.ErrPermission) {
				break // not allowed as a namespace default: per socket
			}
			if err != nil {
				return l, err
			}
		}
	}
	l.lossOnly = o.LossOnly
	backend := o.Backend
	if backend == "" && o.LossOnly != nil {
		backend = BackendTUN
	}
	if backend == BackendKernel && o.LossOnly != nil {
		return l, errors.New("netem: LossOnly needs the TUN backend (the kernel's netem cannot select packets)")
	}
	if backend == "" {
		backend = BackendTUN
		if (p.Loss == 0 || p.LossBurst <= 1) && kernelNetem() {
			backend = BackendKernel
		}
	}
	l.Backend = backend
	switch backend {
	case BackendKernel:
		return l, l.setupVeth(p)
	case BackendTUN:
		return l, l.setupTUN(p, o.Seed)
	}
	return l, fmt.Errorf("netem: unknown backend %q", backend)
}

// setSysctl writes a network sysctl (a path below /proc/sys) of
// namespace ns.
func setSysctl(ns, key, val string) error {
	return netns.In(ns, func() error {
		if err := os.WriteFile("/proc/sys/"+key, []byte(val), 0o644); err != nil {
			return fmt.Errorf("netem: %s = %s in %s: %w", key, val, ns, err)
		}
		return nil
	})
}

// tcpAvailable checks that the kernel has congestion control cc.
func tcpAvailable(cc string) error {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		return fmt.Errorf("netem: TCP congestion control %q: %w", cc, err)
	}
	if !slices.Contains(strings.Fields(string(b)), cc) {
		return fmt.Errorf("netem: TCP congestion control %q: this kernel has %s", cc, strings.TrimSpace(string(b)))
	}
	return nil
}

// TCPCongestion returns the TCP congestion control of the link: the one
// LinkOptions asked for (which sockets set themselves where the
// namespaces could not take it as their default), else namespace A's
// default.
func (l *Link) TCPCongestion() string {
	if l.tcpCC != "" {
		return l.tcpCC
	}
	var v string
	_ = netns.In(l.NSA, func() error {
		b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
		v = strings.TrimSpace(string(b))
		return err
	})
	return v
}

// kernelNetem reports whether the kernel can attach netem here: it tries
// in a throwaway namespace (loading sch_netem first where modprobe
// exists).
func kernelNetem() bool {
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	_ = exec.Command("modprobe", "sch_netem").Run()
	ns, err := newNamespace("nmprobe" + hex.EncodeToString(rb[:]))
	if err != nil {
		return false
	}
	defer ns.close()
	return ns.setNetem("lo", Profile{}, 65536, false) == nil
}

// setupVeth joins the namespaces with a veth pair and attaches netem to
// both ends.
func (l *Link) setupVeth(p Profile) error {
	l.devA, l.devB = "nm0", "nm1"
	a, b := l.ns[0], l.ns[1]
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: l.devA}, PeerName: l.devB, PeerNamespace: netlink.NsFd(int(b.fd))}
	if err := a.h.LinkAdd(veth); err != nil {
		return fmt.Errorf("netem: veth pair: %w", err)
	}
	for _, c := range []struct {
		ns        *namespace
		dev, addr string
	}{{a, l.devA, l.AddrA}, {b, l.devB, l.AddrB}} {
		if err := c.ns.setUp(c.dev, c.addr, l.mtu); err != nil {
			return err
		}
		if err := c.ns.setNetem(c.dev, p, l.mtu, false); err != nil {
			return err
		}
	}
	return nil
}

func (l *Link) setupTUN(p Profile, seed uint64) error {
	l.devA, l.devB = "nmt0", "nmt0"
	for i, addr := range []string{l.AddrA, l.AddrB} {
		f, err := openTUN(l.ns[i].name, "nmt0")
		if err != nil {
			return err
		}
		l.files[i] = f
		if err := l.ns[i].setUp("nmt0", addr, l.mtu); err != nil {
			return err
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	for i := range 2 {
		m, err := NewModel(p, seed+uint64(i))
		if err != nil {
			return err
		}
		l.dirs[i] = &direction{m: m, wake: make(chan struct{}, 1)}
	}
	l.run(l.files[0], l.files[1], l.dirs[0])
	l.run(l.files[1], l.files[0], l.dirs[1])
	return nil
}

// openTUN creates TUN device dev (IFF_TUN|IFF_NO_PI: raw IP packets) in
// namespace ns.
func openTUN(ns, dev string) (*os.File, error) {
	var f *os.File
	err := netns.In(ns, func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(dev)
		if err != nil {
			unix.Close(fd)
			return err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("TUNSETIFF: %w", err)
		}
		f = os.NewFile(uintptr(fd), dev)
		return nil
	})
	return f, err
}

// InA runs fn on an OS thread in namespace A: the sockets fn opens live
// there (goroutines fn starts do not).
func (l *Link) InA(fn func() error) error { return netns.In(l.NSA, fn) }

// InB runs fn in namespace B, as InA.
func (l *Link) InB(fn func() error) error { return netns.In(l.NSB, fn) }

// MTU is the link's MTU.
func (l *Link) MTU() int { return l.mtu }

// SetProfile changes the impairment of both directions from now on
// (packets already queued keep their times).
func (l *Link) SetProfile(p Profile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if l.Backend == BackendKernel {
		for i, dev := range []string{l.devA, l.devB} {
			if err := l.ns[i].setNetem(dev, p, l.mtu, true); err != nil {
				return err
			}
		}
		return nil
	}
	for i, d := range l.dirs {
		m, err := NewModel(p, uint64(time.Now().UnixNano())+uint64(i))
		if err != nil {
			return err
		}
		d.mu.Lock()
		m.c = d.m.c // counters carry on
		d.m = m
		d.mu.Unlock()
	}
	return nil
}

// SetDown takes the link down (every packet dropped, both ways) or brings
// it back: an outage.
func (l *Link) SetDown(down bool) error {
	if l.Backend == BackendKernel {
		for i, dev := range []string{l.devA, l.devB} {
			if err := l.ns[i].setLinkUp(dev, !down); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range l.dirs {
		d.down.Store(down)
	}
	return nil
}

// Counters returns what each direction (A→B, B→A) did so far; zero with
// the kernel backend.
func (l *Link) Counters() (ab, ba Counters) {
	if l.Backend != BackendTUN || l.dirs[0] == nil {
		return
	}
	return l.dirs[0].counters(), l.dirs[1].counters()
}

// Close stops the link and removes both namespaces.
func (l *Link) Close() {
	if l.closed.Swap(true) {
		return
	}
	close(l.stop)
	for _, f := range l.files {
		if f != nil {
			_ = f.Close()
		}
	}
	l.wg.Wait()
	for _, ns := range l.ns {
		if ns != nil {
			ns.close()
		}
	}
}

// direction is one direction of the TUN backend: its model and the
// packets waiting for their departure time.
type direction struct {
	mu   sync.Mutex
	m    *Model
	q    pktHeap
	seq  uint64
	down atomic.Bool
	wake chan struct{}
	// downDrops counts packets dropped while the link was down.
	downDrops atomic.Uint64
}

func (d *direction) counters() Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.m.c
	c.Lost += d.downDrops.Load()
	return c
}

type pkt struct {
	at  time.Time
	seq uint64
	b   []byte
}

type pktHeap []pkt

func (h pktHeap) Len() int { return len(h) }
func (h pktHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h pktHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pktHeap) Push(x any)   { *h = append(*h, x.(pkt)) }
func (h *pktHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = pkt{}
	*h = old[:len(old)-1]
	return x
}

// run starts the two goroutines of one direction: a reader that decides
// each packet's fate and queues it, and a sender that writes each packet
// out when it is due.
func (l *Link) run(in, out *os.File, d *direction) {
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		buf := make([]byte, 65536)
		var at []time.Time
		for {
			n, err := in.Read(buf)
			if err != nil {
				return
			}
			if d.down.Load() {
				d.downDrops.Add(1)
				continue
			}
			d.mu.Lock()
			var v Verdict
			if l.lossOnly != nil && !l.lossOnly(buf[:n]) {
				at, v = d.m.AdmitExempt(time.Now(), n, at[:0])
			} else {
				at, v = d.m.Admit(time.Now(), n, at[:0])
			}
			if v == Delivered {
				b := append([]byte(nil), buf[:n]...)
				for _, t := range at {
					d.seq++
					heap.Push(&d.q, pkt{at: t, seq: d.seq, b: b})
				}
			}
			d.mu.Unlock()
			select {
			case d.wake <- struct{}{}:
			default:
			}
		}
	}()
	go func() {
		defer l.wg.Done()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		var due [][]byte
		for {
			d.mu.Lock()
			now := time.Now()
			due = due[:0]
			for len(d.q) > 0 && !d.q[0].at.After(now) {
				due = append(due, heap.Pop(&d.q).(pkt).b)
			}
			next := time.Hour
			if len(d.q) > 0 {
				next = d.q[0].at.Sub(now)
			}
			d.mu.Unlock()
			for _, b := range due {
				if d.down.Load() {
					d.downDrops.Add(1)
					continue
				}
				_, _ = out.Write(b)
			}
			timer.Reset(next)
			select {
			case <-l.stop:
				return
			case <-d.wake:
			case <-timer.C:
			}
		}
	}()
}
