package main

import (
	"context"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/pmtu"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// cliDefaultOptions are the transport.Options of a command given no
// lower layer flag.
func cliDefaultOptions(t *testing.T) transport.Options {
	t.Helper()
	var f llpFlags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.register(fs)
	require.NoError(t, fs.Parse(nil))
	o, err := f.options()
	require.NoError(t, err)
	return o
}

// TestCLIDefaultsAreTheLibrarys: a command given no lower layer flag
// behaves as transport's zero Options: the same LLP, IRD, ORD and MTU
// policy (the MULPDU over loopback), and every other field left zero.
func TestCLIDefaultsAreTheLibrarys(t *testing.T) {
	cli := cliDefaultOptions(t)
	code, help, _ := runCLI("bench", "-h")
	require.Equal(t, 0, code)
	m := regexp.MustCompile(`(?m)^  -d string\n.*\(default "([^"]*)"\)$`).FindStringSubmatch(help)
	require.NotNil(t, m, "bench -h shows -d's default")
	assert.Equal(t, cli.LLP, m[1], "perftest's -d is --llp")
	assert.Equal(t, transport.Options{LLP: cli.LLP, IRD: cli.IRD, ORD: cli.ORD}, cli,
		"the CLI sets no other field by default: the library's defaults apply")

	ln, err := transport.Listen(transport.Options{}, "127.0.0.1:0")
	require.NoError(t, err)
	assert.Equal(t, cli.LLP, ln.Stats().LLP, "the default LLP")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- ln.Serve(ctx, new(rdmap.Device).AllocPD(),
			&transport.HandlerFuncs{})
	}()
	type seen struct {
		llp            string
		ird, ord, mulp int
	}
	dial := func(o transport.Options) seen {
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		c, err := transport.Dial(dctx, o, ln.Addr(), 1, new(rdmap.Device).AllocPD(), nil)
		require.NoError(t, err)
		ep := c.Endpoints[0]
		s := seen{ep.LLPInfo().Kind, ep.Config().IRD, ep.Config().ORD, c.MULPDU}
		require.NoError(t, c.Close(dctx))
		return s
	}
	lib, cmd := dial(transport.Options{}), dial(cli)
	cancel()
	require.NoError(t, <-served)
	// A dial may report the MULPDU of BASE_PLPMTU: its PLPMTUD had not yet
	// confirmed a larger probe (RFC 8899 §5.2 PROBE_BASE), on a loaded host
	// for a second and more. That says nothing of the MTU policy; any other
	// difference does.
	if base := pmtu.SCTPMULPDU(1200, false, true); lib.mulp != cmd.mulp && (lib.mulp == base || cmd.mulp == base) {
		t.Logf("a dial still at BASE_PLPMTU (MULPDU %d): %+v, %+v", base, lib, cmd)
		lib.mulp, cmd.mulp = 0, 0
	}
	assert.Equal(t, lib, cmd, "the zero Options and the CLI's defaults")
	assert.Equal(t, seen{cli.LLP, cli.IRD, cli.ORD, lib.mulp}, lib, "negotiated between two default ends")
}

// TestLLPFlagFollowsTheRegistry: --llp's help names every LLP of the
// transport registry, an unknown one is refused naming them all, and
// docs/cli.md's table has a row for each, in its order, the default marked.
func TestLLPFlagFollowsTheRegistry(t *testing.T) {
	var f llpFlags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.register(fs)
	help := fs.Lookup("llp").Usage
	doc, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	last := -1
	for i, l := range transport.LLPs() {
		assert.Contains(t, help, l.Name+" ("+l.Description+")")
		row := "| `" + l.Name + "` "
		if i == 0 {
			row = "| `" + l.Name + "` (default) "
		}
		at := strings.Index(string(doc), row)
		assert.Greater(t, at, last, "docs/cli.md's --llp table has %q after the previous LLP", row)
		last = at
	}
	code, _, errOut := runCLI("bench", "--connect", "x", "--llp", "carrier-pigeon")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "want "+strings.Join(llpNames(), ", "))
	code, _, errOut = runCLI("bench", "--connect", "x", "--llp", "sctp-kernel", "--mtu", "1500")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--mtu applies to --llp sctp-native and sctp-pion only")
}

// TestLocalFlag_RFC9260_6_4: --local gives every LLP its local address;
// several, a multi-homed client, only where the LLP is multi-homed
// (sctp-native, sctp-kernel), and only IP addresses.
func TestLocalFlag_RFC9260_6_4(t *testing.T) {
	var f clientFlags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	f.register(fs, "64K")
	require.NoError(t, fs.Parse([]string{"--connect", "10.0.1.1/10.0.2.1:7400", "--local", "10.0.1.2/10.0.2.2"}))
	cfg, _, err := f.config()
	require.NoError(t, err)
	assert.Equal(t, "10.0.1.2/10.0.2.2", cfg.Transport.Native.LocalAddr)
	for _, tc := range []struct{ llp, local, want string }{
		{transport.MPA, "10.0.1.2/10.0.2.2", "several addresses need --llp sctp-native or sctp-kernel"},
		{transport.SCTPPion, "10.0.1.2/10.0.2.2", "several addresses need"},
		{transport.SCTPNative, "host.example", "want an IP address"},
	} {
		code, _, errOut := runCLI("bench", "--connect", "10.0.1.1:7400", "--llp", tc.llp, "--local", tc.local, "write")
		assert.Equal(t, 2, code, tc.llp)
		assert.Contains(t, errOut, tc.want, tc.llp)
	}
}
