//go:build linux

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/netns"
)

// vethPair makes two network namespaces joined by one veth pair at mtu
// (names unique per run, deleted when the test ends) and returns them with
// their addresses.
func vethPair(t *testing.T, mtu int) (nsA, addrA, nsB, addrB string) {
	t.Helper()
	var rb [3]byte
	_, err := rand.Read(rb[:])
	require.NoError(t, err)
	id := hex.EncodeToString(rb[:])
	nsA, nsB = "ioa"+id, "iob"+id
	addrA, addrB = "10.77.0.1", "10.77.0.2"
	m := strconv.Itoa(mtu)
	t.Cleanup(func() {
		_, _ = netns.IP("netns", "del", nsA)
		_, _ = netns.IP("netns", "del", nsB)
	})
	for _, c := range [][]string{
		{"netns", "add", nsA}, {"netns", "add", nsB},
		{"link", "add", "va", "netns", nsA, "mtu", m, "type", "veth", "peer", "name", "vb", "netns", nsB, "mtu", m},
		{"-n", nsA, "addr", "add", addrA + "/24", "dev", "va"},
		{"-n", nsB, "addr", "add", addrB + "/24", "dev", "vb"},
		{"-n", nsA, "link", "set", "lo", "up"}, {"-n", nsB, "link", "set", "lo", "up"},
		{"-n", nsA, "link", "set", "va", "up"}, {"-n", nsB, "link", "set", "vb", "up"},
	} {
		_, err := netns.IP(c...)
		require.NoError(t, err)
	}
	return nsA, addrA, nsB, addrB
}

// TestInteropDefaults_RFC8899Veth1500: every pair of sctp-native and
// sctp-pion at their defaults, `serve` in one network namespace and
// `bench --streams 4 write read send` in another, across a veth pair at
// MTU 1500: each a process of its own (this test binary as the command).
// Needs root (CAP_NET_ADMIN for the namespaces): it fails without.
func TestInteropDefaults_RFC8899Veth1500(t *testing.T) {
	require.Zero(t, os.Geteuid(), "needs root: two network namespaces joined by a veth pair")
	nsA, _, nsB, addrB := vethPair(t, 1500)
	for _, srv := range interopStacks {
		for _, cli := range interopStacks {
			t.Run(fmt.Sprintf("serve=%s,bench=%s", srv, cli), func(t *testing.T) {
				sc := exec.Command("ip", "netns", "exec", nsB, os.Args[0], "-test.run=^$")
				sc.Env = append(os.Environ(), serveChildEnv+"=--listen "+net.JoinHostPort(addrB, "0")+" --llp "+srv)
				addr := startServer(t, sc)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				bc := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", nsA, os.Args[0]}, interopBench(addr, cli)...)...)
				bc.Env = append(os.Environ(), asCLI+"=1")
				var out, errOut lockedBuffer
				bc.Stdout, bc.Stderr = &out, &errOut
				require.NoError(t, bc.Run(), "bench: %s\n%s", errOut.String(), out.String())
				checkInterop(t, out.String(), cli)
			})
		}
	}
}
