//go:build linux

package netem

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir holds named network namespaces, as iproute2's `ip netns`
// keeps them: a bind mount of the namespace on a file named after it.
// internal/netns.In and `ip netns exec` find them there.
const netnsDir = "/run/netns"

// namespace is a named network namespace with a netlink handle inside
// it. Everything goes through netlink and system calls, not through
// iproute2's ip and tc, so that a Link also works where they are missing
// or too small (the busybox guest of internal/tools/vmtest).
type namespace struct {
	name string
	fd   netns.NsHandle
	h    *netlink.Handle
}

// newNamespace creates network namespace name with its loopback up.
func newNamespace(name string) (ns *namespace, err error) {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return nil, fmt.Errorf("netem: %w", err)
	}
	path := filepath.Join(netnsDir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return nil, fmt.Errorf("netem: namespace %s: %w", name, err)
	}
	_ = f.Close()
	ns = &namespace{name: name, fd: -1}
	defer func() {
		if err != nil {
			ns.close()
			ns = nil
		}
	}()
	// A thread of its own enters a new namespace and pins it on the file;
	// the goroutine ends locked to the thread, so that the runtime ends
	// the thread rather than reuse it in the wrong namespace.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netem: unshare: %w", err)
			return
		}
		if err := unix.Mount("/proc/thread-self/ns/net", path, "none", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("netem: bind mount of namespace %s: %w", name, err)
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		return ns, err
	}
	if ns.fd, err = netns.GetFromPath(path); err != nil {
		return ns, fmt.Errorf("netem: namespace %s: %w", name, err)
	}
	if ns.h, err = netlink.NewHandleAt(ns.fd, unix.NETLINK_ROUTE); err != nil {
		return ns, fmt.Errorf("netem: netlink in %s: %w", name, err)
	}
	lo, err := ns.h.LinkByName("lo")
	if err == nil {
		err = ns.h.LinkSetUp(lo)
	}
	if err != nil {
		return ns, fmt.Errorf("netem: lo up in %s: %w", name, err)
	}
	return ns, nil
}

// close removes the namespace; it disappears with the last socket or
// thread inside it.
func (ns *namespace) close() {
	if ns.h != nil {
		ns.h.Close()
	}
	if ns.fd >= 0 {
		_ = ns.fd.Close()
	}
	path := filepath.Join(netnsDir, ns.name)
	_ = unix.Unmount(path, unix.MNT_DETACH)
	_ = os.Remove(path)
}

// setUp gives device dev of the namespace its IPv4 address (a /24) and
// MTU and brings it up.
func (ns *namespace) setUp(dev, addr string, mtu int) error {
	l, err := ns.h.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("netem: %s in %s: %w", dev, ns.name, err)
	}
	a, err := netlink.ParseAddr(addr + "/24")
	if err != nil {
		return err
	}
	if err := ns.h.AddrAdd(l, a); err != nil {
		return fmt.Errorf("netem: address %s on %s in %s: %w", addr, dev, ns.name, err)
	}
	if err := ns.h.LinkSetMTU(l, mtu); err != nil {
		return fmt.Errorf("netem: MTU %d on %s in %s: %w", mtu, dev, ns.name, err)
	}
	return ns.setLinkUp(dev, true)
}

// setLinkUp brings device dev up or down.
func (ns *namespace) setLinkUp(dev string, up bool) error {
	l, err := ns.h.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("netem: %s in %s: %w", dev, ns.name, err)
	}
	if up {
		err = ns.h.LinkSetUp(l)
	} else {
		err = ns.h.LinkSetDown(l)
	}
	if err != nil {
		return fmt.Errorf("netem: %s in %s up=%v: %w", dev, ns.name, up, err)
	}
	return nil
}

// ErrBurstsNeedTUN: the kernel backend is configured over netlink, which
// here cannot express netem's Gilbert-Elliott loss model.
var ErrBurstsNeedTUN = errors.New("netem: bursty loss (LossBurst > 1) needs the TUN backend")

// netemAttrs are the kernel netem qdisc's settings for p, as `tc qdisc
// add dev DEV root netem` would set them: the queue limit counts packets
// (the octet queue at mtu octets a packet), delays and jitter in
// microseconds, probabilities in per cent, the rate in octets per second.
func netemAttrs(p Profile, mtu int) (netlink.NetemQdiscAttrs, error) {
	if p.Loss > 0 && p.LossBurst > 1 {
		return netlink.NetemQdiscAttrs{}, ErrBurstsNeedTUN
	}
	limit := 10000
	if p.Rate > 0 {
		limit = max(p.QueueOctets()/max(mtu, 1), 1)
	}
	a := netlink.NetemQdiscAttrs{
		Limit:       uint32(limit),
		Latency:     uint32(p.Delay / time.Microsecond),
		Jitter:      uint32(p.Jitter / time.Microsecond),
		Loss:        float32(p.Loss * 100),
		Duplicate:   float32(p.Duplicate * 100),
		ReorderProb: float32(p.Reorder * 100),
		ReorderCorr: float32(p.ReorderCorr * 100),
		Rate64:      uint64(p.Rate / 8),
	}
	return a, nil
}

// setNetem attaches (or, with change, replaces) the netem qdisc of p on
// device dev of the namespace.
func (ns *namespace) setNetem(dev string, p Profile, mtu int, change bool) error {
	l, err := ns.h.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("netem: %s in %s: %w", dev, ns.name, err)
	}
	a, err := netemAttrs(p, mtu)
	if err != nil {
		return err
	}
	q := netlink.NewNetem(netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}, a)
	if change {
		if err := ns.h.QdiscReplace(q); err != nil {
			return fmt.Errorf("netem: changing the netem qdisc on %s in %s: %w", dev, ns.name, err)
		}
		return nil
	}
	if err := ns.h.QdiscAdd(q); err != nil {
		return fmt.Errorf("%w: netem qdisc on %s in %s: %w", ErrNoNetem, dev, ns.name, err)
	}
	return nil
}
