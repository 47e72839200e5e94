//go:build linux

package netns

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Topology is h1 — r — h2: link A joins h1 (a0, 10.x.1.1) and r (a1,
// 10.x.1.2), link B joins r (b1, 10.x.2.2) and h2 (b0, 10.x.2.1).
type Topology struct {
	H1, R, H2 string
	// H1Addr and H2Addr are the hosts' IPv4 addresses, H1Addr6 and
	// H2Addr6 their IPv6 addresses.
	H1Addr, H2Addr   string
	H1Addr6, H2Addr6 string
}

// IP runs "ip args..." and returns its combined output.
func IP(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// NewTopology creates the three namespaces with unique names and every
// link at mtu. Call Destroy when done.
func NewTopology(mtu int) (*Topology, error) {
	var rb [3]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(rb[:])
	net := 10 + int(rb[0])%200
	t := &Topology{
		H1: "pmh1" + id, R: "pmr" + id, H2: "pmh2" + id,
		H1Addr: fmt.Sprintf("10.%d.1.1", net), H2Addr: fmt.Sprintf("10.%d.2.1", net),
		H1Addr6: fmt.Sprintf("fd77:%d:1::1", net), H2Addr6: fmt.Sprintf("fd77:%d:2::1", net),
	}
	m := strconv.Itoa(mtu)
	cmds := [][]string{
		{"netns", "add", t.H1}, {"netns", "add", t.R}, {"netns", "add", t.H2},
		{"link", "add", "a0", "netns", t.H1, "mtu", m, "type", "veth", "peer", "name", "a1", "netns", t.R, "mtu", m},
		{"link", "add", "b1", "netns", t.R, "mtu", m, "type", "veth", "peer", "name", "b0", "netns", t.H2, "mtu", m},
		{"-n", t.H1, "addr", "add", t.H1Addr + "/24", "dev", "a0"},
		{"-n", t.R, "addr", "add", fmt.Sprintf("10.%d.1.2/24", net), "dev", "a1"},
		{"-n", t.R, "addr", "add", fmt.Sprintf("10.%d.2.2/24", net), "dev", "b1"},
		{"-n", t.H2, "addr", "add", t.H2Addr + "/24", "dev", "b0"},
		{"-n", t.H1, "link", "set", "lo", "up"}, {"-n", t.R, "link", "set", "lo", "up"}, {"-n", t.H2, "link", "set", "lo", "up"},
		{"-n", t.H1, "link", "set", "a0", "up"}, {"-n", t.R, "link", "set", "a1", "up"},
		{"-n", t.R, "link", "set", "b1", "up"}, {"-n", t.H2, "link", "set", "b0", "up"},
		{"-n", t.H1, "route", "add", "default", "via", fmt.Sprintf("10.%d.1.2", net)},
		{"-n", t.H2, "route", "add", "default", "via", fmt.Sprintf("10.%d.2.2", net)},
		{"-n", t.H1, "-6", "addr", "add", t.H1Addr6 + "/64", "dev", "a0", "nodad"},
		{"-n", t.R, "-6", "addr", "add", fmt.Sprintf("fd77:%d:1::2/64", net), "dev", "a1", "nodad"},
		{"-n", t.R, "-6", "addr", "add", fmt.Sprintf("fd77:%d:2::2/64", net), "dev", "b1", "nodad"},
		{"-n", t.H2, "-6", "addr", "add", t.H2Addr6 + "/64", "dev", "b0", "nodad"},
		{"-n", t.H1, "-6", "route", "add", "default", "via", fmt.Sprintf("fd77:%d:1::2", net)},
		{"-n", t.H2, "-6", "route", "add", "default", "via", fmt.Sprintf("fd77:%d:2::2", net)},
	}
	for _, c := range cmds {
		if _, err := IP(c...); err != nil {
			t.Destroy()
			return nil, err
		}
	}
	for _, k := range []string{"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"} {
		if err := t.Sysctl(t.R, k, "1"); err != nil {
			t.Destroy()
			return nil, err
		}
	}
	return t, nil
}

// Destroy deletes the namespaces (and so the veth links).
func (t *Topology) Destroy() {
	for _, ns := range []string{t.H1, t.R, t.H2} {
		_, _ = IP("netns", "del", ns)
	}
}

// Sysctl writes a sysctl inside namespace ns.
func (t *Topology) Sysctl(ns, key, val string) error {
	return In(ns, func() error { return os.WriteFile("/proc/sys/"+key, []byte(val), 0o644) })
}

// SetMTU sets the MTU of dev in namespace ns.
func SetMTU(ns, dev string, mtu int) error {
	_, err := IP("-n", ns, "link", "set", dev, "mtu", strconv.Itoa(mtu))
	return err
}

// In runs fn on an OS thread switched into namespace ns. Sockets created
// by fn stay in ns for their whole life, whatever thread uses them later.
// New threads are never started from a locked thread in Go (they come from
// the template thread), so the switch does not leak.
func In(ns string, fn func() error) error {
	target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(target)
	runtime.LockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer unix.Close(self)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	ferr := fn()
	if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: it dies with the goroutine.
		return fmt.Errorf("restore netns: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// IPStats returns the "Ip:" counters of /proc/net/snmp inside ns.
func IPStats(ns string) (map[string]int64, error) {
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/net/snmp").Output()
	if err != nil {
		return nil, err
	}
	var names, vals []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "Ip:" {
			continue
		}
		if names == nil {
			names = f[1:]
		} else {
			vals = f[1:]
		}
	}
	if len(names) == 0 || len(names) != len(vals) {
		return nil, fmt.Errorf("no Ip: counters in /proc/net/snmp of %s", ns)
	}
	m := make(map[string]int64, len(names))
	for i, n := range names {
		v, _ := strconv.ParseInt(vals[i], 10, 64)
		m[n] = v
	}
	return m, nil
}

// IP6Stats returns the Ip6 counters of /proc/net/snmp6 inside ns.
func IP6Stats(ns string) (map[string]int64, error) {
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/net/snmp6").Output()
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			m[f[0]] = v
		}
	}
	return m, nil
}

// Frag sums fragments created and reassemblies requested in every
// namespace of the topology.
type Frag struct {
	// Per namespace: FragCreates, ReasmReqds.
	Creates, Reasm map[string]int64
}

// Fragments reads the fragmentation counters (IPv4 and IPv6) of every
// namespace.
func (t *Topology) Fragments() (Frag, error) {
	f := Frag{Creates: map[string]int64{}, Reasm: map[string]int64{}}
	for _, ns := range []string{t.H1, t.R, t.H2} {
		m, err := IPStats(ns)
		if err != nil {
			return f, err
		}
		m6, err := IP6Stats(ns)
		if err != nil {
			return f, err
		}
		f.Creates[ns] = m["FragCreates"] + m6["Ip6FragCreates"]
		f.Reasm[ns] = m["ReasmReqds"] + m6["Ip6ReasmReqds"]
	}
	return f, nil
}

// Total returns the sum of all counters.
func (f Frag) Total() int64 {
	var n int64
	for _, v := range f.Creates {
		n += v
	}
	for _, v := range f.Reasm {
		n += v
	}
	return n
}
