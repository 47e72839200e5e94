//go:build linux

// Command siwcap captures the loopback traffic of a shell command inside
// the siw VM, where there is no tcpdump, and prints it as a base64 pcapng
// between PCAP-BEGIN and PCAP-END lines on the console. siw's connections
// to 10.0.0.1 (dummy0) travel over lo. Keep runs small: the whole capture
// is held in memory and printed.
package main

// It made interop/siw/testdata/perftest-siw.pcap:
//
//	CGO_ENABLED=0 go build -o /tmp/siwcap ./interop/siw/siwcap
//	scripts/vm/siw-run.sh /tmp/siwcap 'ib_write_bw -R -d siw0 -p 18601 -s 4096 -n 5 -F & sleep 1;
//	    ib_write_bw -R -d siw0 -p 18601 -s 4096 -n 5 -F 10.0.0.1; wait' > out.txt
//	sed -n '/PCAP-BEGIN/,/PCAP-END/p' out.txt | grep -v PCAP | tr -d '\r\n' | base64 -d > x.pcap

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: siwcap 'SHELL COMMAND'")
		os.Exit(2)
	}
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, int(htons(syscall.ETH_P_ALL)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "siwcap:", err)
		os.Exit(1)
	}
	lo := 1 // ifindex of lo
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ALL), Ifindex: lo}); err != nil {
		fmt.Fprintln(os.Stderr, "siwcap:", err)
		os.Exit(1)
	}
	tv := syscall.Timeval{Usec: 200000}
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)

	var pcap bytes.Buffer
	w, err := pcapgo.NewNgWriter(&pcap, layers.LinkTypeEthernet)
	if err != nil {
		fmt.Fprintln(os.Stderr, "siwcap:", err)
		os.Exit(1)
	}

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 70000)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, from, err := syscall.Recvfrom(fd, buf, 0)
			if err != nil || n > 65535 {
				continue
			}
			if ll, ok := from.(*syscall.SockaddrLinklayer); ok && ll.Pkttype == syscall.PACKET_OUTGOING {
				continue // lo shows every packet twice
			}
			ci := gopacket.CaptureInfo{Timestamp: time.Now(), CaptureLength: n, Length: n}
			_ = w.WritePacket(ci, buf[:n])
		}
	}()

	cmd := exec.Command("/bin/sh", "-c", os.Args[1])
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	runErr := cmd.Run()
	close(stop)
	<-done
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "siwcap:", err)
	}
	fmt.Println("PCAP-BEGIN")
	s := base64.StdEncoding.EncodeToString(pcap.Bytes())
	for len(s) > 0 {
		k := min(len(s), 76)
		fmt.Println(s[:k])
		s = s[k:]
	}
	fmt.Println("PCAP-END")
	if runErr != nil {
		fmt.Fprintln(os.Stderr, "siwcap: command:", runErr)
		os.Exit(1)
	}
}
