//go:build linux

package harness

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/netns"
)

// vethPair is two namespaces joined by one veth pair: devA in nsA at
// addrA, devB in nsB.
type vethPair struct {
	nsA, nsB   string
	devA, devB string
	addrA      string
}

func newVethPair() (*vethPair, error) {
	var rb [3]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(rb[:])
	p := &vethPair{nsA: "vbA" + id, nsB: "vbB" + id, devA: "vbA" + id, devB: "vbB" + id, addrA: "10.233.0.1"}
	cmds := [][]string{
		{"netns", "add", p.nsA}, {"netns", "add", p.nsB},
		{"link", "add", p.devA, "netns", p.nsA, "type", "veth", "peer", "name", p.devB, "netns", p.nsB},
		{"-n", p.nsA, "addr", "add", p.addrA + "/24", "dev", p.devA},
		{"-n", p.nsB, "addr", "add", "10.233.0.2/24", "dev", p.devB},
		{"-n", p.nsA, "link", "set", "lo", "up"}, {"-n", p.nsB, "link", "set", "lo", "up"},
		{"-n", p.nsA, "link", "set", p.devA, "up"}, {"-n", p.nsB, "link", "set", p.devB, "up"},
	}
	for _, c := range cmds {
		if _, err := netns.IP(c...); err != nil {
			p.destroy()
			return nil, err
		}
	}
	return p, nil
}

func (p *vethPair) destroy() {
	_, _ = netns.IP("netns", "del", p.nsA)
	_, _ = netns.IP("netns", "del", p.nsB)
}

// set gives both ends mtu and turns GRO on or off on both, then reads
// the offloads back.
func (p *vethPair) set(mtu int, gro bool) (offA, offB string, err error) {
	onOff := map[bool]string{true: "on", false: "off"}[gro]
	for _, e := range [][2]string{{p.nsA, p.devA}, {p.nsB, p.devB}} {
		if err := netns.SetMTU(e[0], e[1], mtu); err != nil {
			return "", "", err
		}
		if out, err := exec.Command("ip", "netns", "exec", e[0], "ethtool", "-K", e[1], "gro", onOff).CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("ethtool -K %s gro %s: %w: %s", e[1], onOff, err, out)
		}
	}
	if offA, err = p.offloads(p.nsA, p.devA); err == nil {
		offB, err = p.offloads(p.nsB, p.devB)
	}
	return offA, offB, err
}

// vethOffloads are the features of `ethtool -k` the page states.
var vethOffloads = []string{"rx-checksumming", "tx-checksumming", "scatter-gather", "tcp-segmentation-offload",
	"tx-udp-segmentation", "tx-sctp-segmentation", "generic-segmentation-offload", "generic-receive-offload",
	"large-receive-offload", "rx-gro-list", "rx-udp-gro-forwarding"}

// offloads reads dev's offload settings back with ethtool -k: "name
// value" pairs of vethOffloads, comma separated.
func (p *vethPair) offloads(ns, dev string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", ns, "ethtool", "-k", dev).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ethtool -k %s: %w: %s", dev, err, out)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			got[k] = strings.TrimSpace(v)
		}
	}
	var parts []string
	for _, k := range vethOffloads {
		if v, ok := got[k]; ok {
			parts = append(parts, k+" "+v)
		}
	}
	return strings.Join(parts, ", "), nil
}

// errNoEthtool says how to get ethtool.
var errNoEthtool = errors.New("harness: the veth mode needs ethtool (scripts/ethtool-setup.sh installs it)")

// RunVeth measures, for each MTU and GRO setting of one veth pair between
// two namespaces, raw TCP and RDMA Write, Read and Send over each LLP,
// each side a child process (cfg.Exe) whose CPU time is its own. Each
// round runs every cell once; the figures are the rounds' medians.
func RunVeth(cfg VethConfig) (*VethResults, error) {
	cfg.defaults()
	if os.Geteuid() != 0 {
		return nil, errVethUnsupported
	}
	if cfg.Exe == "" {
		return nil, errors.New("harness: VethConfig.Exe is required")
	}
	if _, err := exec.LookPath("ethtool"); err != nil {
		return nil, errNoEthtool
	}
	res := &VethResults{Config: cfg, Machine: describe()}
	start := time.Now()
	p, err := newVethPair()
	if err != nil {
		return nil, err
	}
	defer p.destroy()
	type setting struct {
		mtu int
		gro bool
	}
	var settings []setting
	for _, m := range cfg.MTUs {
		for _, g := range cfg.GRO {
			settings = append(settings, setting{m, g})
		}
	}
	samples := make([]*vethSamples, len(settings))
	res.Paths = make([]VethPath, len(settings))
	for i, s := range settings {
		samples[i] = newVethSamples()
		res.Paths[i] = VethPath{MTU: s.mtu, GRO: s.gro}
	}
	for round := range cfg.Runs {
		for i, s := range settings {
			offA, offB, err := p.set(s.mtu, s.gro)
			if err != nil {
				return nil, err
			}
			if round == 0 {
				res.Paths[i].OffloadA, res.Paths[i].OffloadB = offA, offB
			}
			cells := [][2]string{{"tcp", "raw"}, {"sctp", "raw"}}
			for _, llp := range cfg.LLPs {
				for _, op := range vethOps {
					cells = append(cells, [2]string{llp, op})
				}
			}
			for _, k := range cells {
				if err := cfg.Context.Err(); err != nil {
					return nil, err
				}
				var c vethCell
				if k[1] == "raw" {
					c, err = p.rawCell(&cfg, k[0])
				} else {
					c, err = p.rdmaCell(&cfg, k[0], k[1])
				}
				sm := samples[i]
				if err != nil {
					sm.errs[k] = err
					cfg.logf("round %d MTU %d GRO %s %s %s: %v", round+1, s.mtu, onOff(s.gro), k[0], k[1], err)
					continue
				}
				sm.gbps[k] = append(sm.gbps[k], c.gbps)
				sm.cpuA[k] = append(sm.cpuA[k], c.cpuA)
				sm.cpuB[k] = append(sm.cpuB[k], c.cpuB)
				cfg.logf("round %d MTU %d GRO %s %s %s: %.2f Gbit/s, CPU s/GB passive %.2f active %.2f",
					round+1, s.mtu, onOff(s.gro), k[0], k[1], c.gbps, c.cpuA, c.cpuB)
			}
		}
	}
	for i := range res.Paths {
		res.Paths[i].Figures = samples[i].figures(cfg.LLPs)
	}
	res.Machine.LoadAvgEnd = loadAvg()
	res.Took = time.Since(start)
	return res, nil
}

// vethCell is one measurement: the throughput and each side's CPU
// seconds per GB moved.
type vethCell struct{ gbps, cpuA, cpuB float64 }

// vethChild is a child process in a namespace with its output.
type vethChild struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
	lines  chan []byte
}

// startChild runs cfg.Exe with args in namespace ns; lines carries its
// standard output line by line.
func startChild(ctx context.Context, ns, exe string, args ...string) (*vethChild, error) {
	c := &vethChild{lines: make(chan []byte, 64)}
	c.cmd = exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, exe}, args...)...)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			b := append([]byte(nil), sc.Bytes()...)
			c.stdout.Write(b)
			c.stdout.WriteByte('\n')
			select {
			case c.lines <- b:
			default: // nobody reads: keep the text only
			}
		}
	}()
	return c, nil
}

// listening waits for the child's {"event":"listening"} line.
func (c *vethChild) listening() (string, error) {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				return "", fmt.Errorf("exited before listening: %s", strings.TrimSpace(c.stderr.String()))
			}
			var ev struct{ Event, Addr string }
			if json.Unmarshal(l, &ev) == nil && ev.Event == "listening" && ev.Addr != "" {
				return ev.Addr, nil
			}
		case <-timeout:
			return "", errors.New("did not say where it listens within 30 s")
		}
	}
}

// wait waits for the child's end (signalling it first if sig is not
// nil) and returns its CPU seconds, user and system.
func (c *vethChild) wait(sig os.Signal, limit time.Duration) (float64, error) {
	if sig != nil {
		_ = c.cmd.Process.Signal(sig)
	}
	done := make(chan error, 1)
	go func() {
		for range c.lines {
		}
		done <- c.cmd.Wait()
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		_ = c.cmd.Process.Kill()
		<-done
		return 0, fmt.Errorf("did not end within %v: %s", limit, strings.TrimSpace(c.stderr.String()))
	}
	ps := c.cmd.ProcessState
	cpu := (ps.UserTime() + ps.SystemTime()).Seconds()
	if err != nil {
		return cpu, fmt.Errorf("%w: %s", err, strings.TrimSpace(c.stderr.String()))
	}
	return cpu, nil
}

// kill ends a child that is no longer wanted.
func (c *vethChild) kill() {
	_ = c.cmd.Process.Kill()
	for range c.lines {
	}
	_ = c.cmd.Wait()
}

// rdmaCell runs serve in A and one bench test in B.
func (p *vethPair) rdmaCell(cfg *VethConfig, llp, op string) (vethCell, error) {
	srv, err := startChild(cfg.Context, p.nsA, cfg.Exe, "serve", "--json", "--llp", llp, "--listen", net.JoinHostPort(p.addrA, "0"))
	if err != nil {
		return vethCell{}, err
	}
	addr, err := srv.listening()
	if err != nil {
		srv.kill()
		return vethCell{}, fmt.Errorf("serve: %w", err)
	}
	cl, err := startChild(cfg.Context, p.nsB, cfg.Exe, "bench", "--json", "--llp", llp, "--connect", addr,
		"--size", strconv.Itoa(cfg.Size), "--depth", strconv.Itoa(cfg.Depth), "--duration", cfg.Duration.String(), op)
	if err != nil {
		srv.kill()
		return vethCell{}, err
	}
	cpuB, err := cl.wait(nil, cfg.Duration+2*time.Minute)
	if err != nil {
		srv.kill()
		return vethCell{}, fmt.Errorf("bench: %w", err)
	}
	cpuA, err := srv.wait(syscall.SIGTERM, time.Minute)
	if err != nil {
		return vethCell{}, fmt.Errorf("serve: %w", err)
	}
	var r struct {
		Forward struct {
			Bytes int64   `json:"bytes"`
			Gbps  float64 `json:"gbps"`
		} `json:"forward"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(cl.stdout.Bytes()), &r); err != nil || r.Forward.Bytes <= 0 {
		return vethCell{}, fmt.Errorf("bench printed no result (%v): %s", err, cl.stdout.String())
	}
	gb := vethGB(r.Forward.Bytes)
	return vethCell{gbps: r.Forward.Gbps, cpuA: cpuA / gb, cpuB: cpuB / gb}, nil
}

// rawCell runs the raw sink of proto ("tcp" or "sctp") in A and its
// source in B.
func (p *vethPair) rawCell(cfg *VethConfig, proto string) (vethCell, error) {
	sinkMode, srcMode := proto+"-sink", proto+"-source"
	sink, err := startChild(cfg.Context, p.nsA, cfg.Exe, "harness", sinkMode, net.JoinHostPort(p.addrA, "0"))
	if err != nil {
		return vethCell{}, err
	}
	addr, err := sink.listening()
	if err != nil {
		sink.kill()
		return vethCell{}, fmt.Errorf("%s: %w", sinkMode, err)
	}
	src, err := startChild(cfg.Context, p.nsB, cfg.Exe, "harness", srcMode, addr, cfg.Duration.String(), strconv.Itoa(cfg.Size))
	if err != nil {
		sink.kill()
		return vethCell{}, err
	}
	cpuB, err := src.wait(nil, cfg.Duration+time.Minute)
	if err != nil {
		sink.kill()
		return vethCell{}, fmt.Errorf("%s: %w", srcMode, err)
	}
	cpuA, err := sink.wait(nil, time.Minute)
	if err != nil {
		return vethCell{}, fmt.Errorf("%s: %w", sinkMode, err)
	}
	var r struct {
		Event   string  `json:"event"`
		Bytes   int64   `json:"bytes"`
		Elapsed float64 `json:"elapsed_s"`
	}
	sc := bufio.NewScanner(bytes.NewReader(sink.stdout.Bytes()))
	for sc.Scan() {
		_ = json.Unmarshal(sc.Bytes(), &r)
	}
	if r.Event != "result" || r.Bytes <= 0 || r.Elapsed <= 0 {
		return vethCell{}, fmt.Errorf("%s printed no result: %s", sinkMode, sink.stdout.String())
	}
	gb := vethGB(r.Bytes)
	return vethCell{gbps: float64(r.Bytes) * 8 / r.Elapsed / 1e9, cpuA: cpuA / gb, cpuB: cpuB / gb}, nil
}
