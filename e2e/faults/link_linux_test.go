//go:build linux

package faults

import (
	"container/heap"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sctp-rdma/sctp-rdma/pmtu/nstest"
)

// impairment is a netem profile: loss, duplication, delay with jitter and
// reordering (a Reorder fraction of packets, with correlation ReorderCorr,
// skips the delay), applied in each direction.
type impairment struct {
	Name             string
	Loss, Duplicate  float64 // fractions
	Delay, Jitter    time.Duration
	Reorder, ReoCorr float64
}

// netemArgs is the profile as tc netem arguments.
func (p impairment) netemArgs() []string {
	a := []string{"limit", "10000"}
	if p.Delay > 0 {
		a = append(a, "delay", p.Delay.String())
		if p.Jitter > 0 {
			a = append(a, p.Jitter.String())
		}
	}
	if p.Loss > 0 {
		a = append(a, "loss", fmt.Sprintf("%g%%", p.Loss*100))
	}
	if p.Duplicate > 0 {
		a = append(a, "duplicate", fmt.Sprintf("%g%%", p.Duplicate*100))
	}
	if p.Reorder > 0 {
		a = append(a, "reorder", fmt.Sprintf("%g%%", p.Reorder*100), fmt.Sprintf("%g%%", p.ReoCorr*100))
	}
	return a
}

func (p impairment) String() string { return strings.Join(p.netemArgs()[2:], " ") }

// link joins two network namespaces A (10.N.0.1) and B (10.N.0.2).
type link struct {
	nsA, nsB     string
	addrA, addrB string
	backend      string // "netem" or "tun"
	devA, devB   string
	wire         *tunWire
}

// requireRoot fails without root: make test runs as root (CI included).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the network namespace fault tests need root (CAP_NET_ADMIN); make test runs as root")
	}
}

func ipCmd(args ...string) error {
	_, err := nstest.IP(args...)
	return err
}

func tcCmd(ns string, args ...string) error {
	out, err := exec.Command("tc", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tc -n %s %s: %w: %s", ns, strings.Join(args, " "), err, out)
	}
	return nil
}

// netemAvailable reports whether tc can attach netem (sch_netem built in or
// loadable); FAULTS_LINK=netem or =tun forces a backend.
func netemAvailable(t *testing.T, ns, dev string) bool {
	switch os.Getenv("FAULTS_LINK") {
	case "tun":
		return false
	case "netem":
		require.NoError(t, tcCmd(ns, "qdisc", "add", "dev", dev, "root", "netem", "delay", "0ms"), "FAULTS_LINK=netem")
		require.NoError(t, tcCmd(ns, "qdisc", "del", "dev", dev, "root"))
		return true
	}
	_ = exec.Command("modprobe", "sch_netem").Run()
	if err := tcCmd(ns, "qdisc", "add", "dev", dev, "root", "netem", "delay", "0ms"); err != nil {
		return false
	}
	return tcCmd(ns, "qdisc", "del", "dev", dev, "root") == nil
}

// newLink creates the namespaces and the impaired link between them:
// a veth pair with netem on both ends when the kernel has sch_netem,
// otherwise two TUN devices joined by tunWire in this process.
func newLink(t *testing.T, p impairment) *link {
	t.Helper()
	requireRoot(t)
	var rb [3]byte
	_, _ = rand.Read(rb[:])
	id := hex.EncodeToString(rb[:])
	n := 10 + int(rb[0])%200
	l := &link{nsA: "fla" + id, nsB: "flb" + id,
		addrA: fmt.Sprintf("10.%d.0.1", n), addrB: fmt.Sprintf("10.%d.0.2", n)}
	require.NoError(t, ipCmd("netns", "add", l.nsA))
	t.Cleanup(func() { _ = ipCmd("netns", "del", l.nsA) })
	require.NoError(t, ipCmd("netns", "add", l.nsB))
	t.Cleanup(func() { _ = ipCmd("netns", "del", l.nsB) })
	for _, ns := range []string{l.nsA, l.nsB} {
		require.NoError(t, ipCmd("-n", ns, "link", "set", "lo", "up"))
	}
	l.devA, l.devB = "fv0", "fv1"
	require.NoError(t, ipCmd("link", "add", l.devA, "netns", l.nsA, "type", "veth", "peer", "name", l.devB, "netns", l.nsB))
	if netemAvailable(t, l.nsA, l.devA) {
		l.backend = "netem"
		for _, c := range []struct{ ns, dev, addr string }{{l.nsA, l.devA, l.addrA}, {l.nsB, l.devB, l.addrB}} {
			require.NoError(t, ipCmd("-n", c.ns, "addr", "add", c.addr+"/24", "dev", c.dev))
			require.NoError(t, ipCmd("-n", c.ns, "link", "set", c.dev, "up"))
			require.NoError(t, tcCmd(c.ns, append([]string{"qdisc", "add", "dev", c.dev, "root", "netem"}, p.netemArgs()...)...))
		}
		t.Logf("link: veth with tc netem %v", p)
		return l
	}
	// No sch_netem: the same model in userspace between two TUN devices.
	require.NoError(t, ipCmd("-n", l.nsA, "link", "del", l.devA))
	l.backend = "tun"
	l.devA, l.devB = "ft0", "ft0"
	fa := openTun(t, l.nsA, l.devA, l.addrA)
	fb := openTun(t, l.nsB, l.devB, l.addrB)
	l.wire = newTunWire(fa, fb, p)
	t.Cleanup(l.wire.close)
	t.Logf("link: TUN pair with userspace netem model %v (this kernel has no sch_netem)", p)
	return l
}

// blackhole drops everything from now on, both ways.
func (l *link) blackhole(t *testing.T) {
	t.Helper()
	if l.backend == "netem" {
		for _, c := range []struct{ ns, dev string }{{l.nsA, l.devA}, {l.nsB, l.devB}} {
			require.NoError(t, tcCmd(c.ns, "qdisc", "change", "dev", c.dev, "root", "netem", "loss", "100%"))
		}
		return
	}
	l.wire.drop.Store(true)
}

// inNS runs fn on an OS thread switched into namespace ns; sockets created
// by fn stay in ns (pmtu/nstest.In).
func inNS(ns string, fn func() error) error { return nstest.In(ns, fn) }

func (l *link) inA(fn func() error) error { return inNS(l.nsA, fn) }
func (l *link) inB(fn func() error) error { return inNS(l.nsB, fn) }

// openTun creates TUN device dev (IFF_TUN|IFF_NO_PI: raw IP packets) in
// namespace ns with addr/24, up, MTU 1500.
func openTun(t *testing.T, ns, dev, addr string) *os.File {
	t.Helper()
	var f *os.File
	require.NoError(t, inNS(ns, func() error {
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
	}))
	require.NoError(t, ipCmd("-n", ns, "addr", "add", addr+"/24", "dev", dev))
	require.NoError(t, ipCmd("-n", ns, "link", "set", dev, "mtu", "1500", "up"))
	return f
}

// tunWire carries IP packets between two TUN devices, applying the netem
// model of an impairment in each direction: loss, duplication, a delay of
// Delay ± Jitter (uniform) except for a Reorder fraction of packets that
// are sent at once, and a time-ordered queue (netem's tfifo), so jitter
// reorders too.
type tunWire struct {
	a, b *os.File
	drop atomic.Bool
	// Packets carried, lost, duplicated and sent ahead of the delay.
	packets, lost, duplicated, early atomic.Int64
	wg                               sync.WaitGroup
	stop                             chan struct{}
}

func newTunWire(a, b *os.File, p impairment) *tunWire {
	w := &tunWire{a: a, b: b, stop: make(chan struct{})}
	w.direction(a, b, p, 1)
	w.direction(b, a, p, 2)
	return w
}

func (w *tunWire) String() string {
	return fmt.Sprintf("%d packets: %d lost, %d duplicated, %d sent ahead of the delay",
		w.packets.Load(), w.lost.Load(), w.duplicated.Load(), w.early.Load())
}

// checkImpaired asserts that the emulated link did impair the traffic.
func (l *link) checkImpaired(t *testing.T, p impairment) {
	t.Helper()
	if l.wire == nil {
		return
	}
	t.Logf("wire: %v", l.wire)
	if p.Loss > 0 {
		assert.Positive(t, l.wire.lost.Load(), "no packet lost")
	}
	if p.Duplicate > 0 {
		assert.Positive(t, l.wire.duplicated.Load(), "no packet duplicated")
	}
	if p.Reorder > 0 {
		assert.Positive(t, l.wire.early.Load(), "no packet reordered")
	}
}

func (w *tunWire) close() {
	close(w.stop)
	_ = w.a.Close()
	_ = w.b.Close()
	w.wg.Wait()
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
	*h = old[:len(old)-1]
	return x
}

func (w *tunWire) direction(in, out *os.File, p impairment, seed uint64) {
	rng := mrand.New(mrand.NewPCG(seed, uint64(time.Now().UnixNano())))
	var (
		mu    sync.Mutex
		q     pktHeap
		seq   uint64
		wake  = make(chan struct{}, 1)
		lastU float64
	)
	w.wg.Add(2)
	go func() { // reader: impair and queue
		defer w.wg.Done()
		buf := make([]byte, 65536)
		for {
			n, err := in.Read(buf)
			if err != nil {
				return
			}
			w.packets.Add(1)
			if w.drop.Load() || (p.Loss > 0 && rng.Float64() < p.Loss) {
				w.lost.Add(1)
				continue
			}
			copies := 1
			if p.Duplicate > 0 && rng.Float64() < p.Duplicate {
				copies = 2
				w.duplicated.Add(1)
			}
			now := time.Now()
			mu.Lock()
			for range copies {
				d := p.Delay
				if p.Jitter > 0 {
					d += time.Duration((rng.Float64()*2 - 1) * float64(p.Jitter))
				}
				if p.Reorder > 0 {
					// netem's correlated random number: corr·last + (1−corr)·new.
					lastU = p.ReoCorr*lastU + (1-p.ReoCorr)*rng.Float64()
					if lastU < p.Reorder {
						d = 0 // sent at once, ahead of the delayed ones
						w.early.Add(1)
					}
				}
				seq++
				heap.Push(&q, pkt{at: now.Add(max(d, 0)), seq: seq, b: append([]byte(nil), buf[:n]...)})
			}
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	go func() { // sender: release packets when due
		defer w.wg.Done()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for {
			mu.Lock()
			var due []pkt
			now := time.Now()
			for len(q) > 0 && !q[0].at.After(now) {
				due = append(due, heap.Pop(&q).(pkt))
			}
			var next time.Duration = time.Hour
			if len(q) > 0 {
				next = q[0].at.Sub(now)
			}
			mu.Unlock()
			for _, d := range due {
				if w.drop.Load() {
					continue
				}
				_, _ = out.Write(d.b)
			}
			timer.Reset(next)
			select {
			case <-w.stop:
				return
			case <-wake:
			case <-timer.C:
			}
		}
	}()
}
