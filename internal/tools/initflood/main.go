//go:build linux

// Command initflood measures what an SCTP INIT flood costs a running
// `sctp-rdma serve` (sctp-pion): it sends -n INITs, each from its own
// source address (127.1.0.0/16) and port, at -rate per second, while a
// `sctp-rdma bench` runs against the same server, and samples the
// server's resident memory (VmRSS of -pid) before, at its peak during the
// flood, and -settle after it (docs/security.md, `make flood`).
//
//	sctp-rdma serve --listen 127.0.0.1:18515 &
//	go run ./internal/tools/initflood -addr 127.0.0.1:18515 -pid $! -n 100000 -bench ./sctp-rdma
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

func rssKiB(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18515", "the server's UDP address")
	pid := flag.Int("pid", 0, "the server's process id (for VmRSS)")
	n := flag.Int("n", 100000, "INITs to send")
	rate := flag.Int("rate", 10000, "INITs per second")
	bench := flag.String("bench", "", "sctp-rdma binary: run `bench write` against the server during the flood")
	llp := flag.String("llp", "sctp-native", "the server's LLP, for the bench")
	settle := flag.Duration("settle", 30*time.Second, "wait after the flood before the last sample")
	flag.Parse()
	to, err := netip.ParseAddrPort(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "initflood:", err)
		os.Exit(2)
	}
	start := rssKiB(*pid)
	var peak atomic.Int64
	peak.Store(start)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if r := rssKiB(*pid); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	benchDone := make(chan error, 1)
	if *bench != "" {
		go func() {
			time.Sleep(time.Second) // the flood is under way
			cmd := exec.Command(*bench, "bench", "--llp", *llp, "--connect", *addr, "--duration", "3s", "--size", "64K", "write")
			out, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, out)
			} else {
				fmt.Print(string(out))
			}
			benchDone <- err
		}()
	}
	pkt := wire.AppendHeader(nil, wire.Header{SrcPort: 6000, DstPort: 5000})
	began := time.Now()
	for i := range *n {
		in := wire.Init{InitiateTag: uint32(i + 1), ARwnd: 65536, OutboundStreams: 10, InboundStreams: 10, InitialTSN: 1}
		in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
		b := in.Append(pkt[:wire.HeaderLen])
		wire.SetChecksum(b)
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1, byte(i / 250 % 256), byte(i%250 + 1)}), 0)
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(src))
		if err != nil {
			fmt.Fprintln(os.Stderr, "initflood:", err)
			os.Exit(1)
		}
		_, _ = c.WriteToUDPAddrPort(b, to)
		_ = c.Close()
		if due := began.Add(time.Duration(i+1) * time.Second / time.Duration(*rate)); time.Until(due) > 0 {
			time.Sleep(time.Until(due))
		}
	}
	elapsed := time.Since(began)
	if *bench != "" {
		if err := <-benchDone; err != nil {
			fmt.Fprintln(os.Stderr, "initflood: the bench during the flood failed:", err)
			os.Exit(1)
		}
	}
	close(stop)
	atEnd := rssKiB(*pid)
	time.Sleep(*settle)
	after := rssKiB(*pid)
	fmt.Printf("initflood: %d INITs in %v from %d source addresses; server VmRSS %d KiB before, peak %+d KiB, %+d KiB at the end, %+d KiB %v after\n",
		*n, elapsed.Round(time.Millisecond), *n, start, peak.Load()-start, atEnd-start, after-start, *settle)
}
