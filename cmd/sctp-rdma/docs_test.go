package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/secure"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/vmtest"
)

// docCommand is one `sctp-rdma ...` line quoted in a code block of
// README.md or docs/*.md.
type docCommand struct {
	file  string
	line  int
	text  string
	args  []string // after "sctp-rdma"
	prose string   // the paragraph line before its code block
	// transcript marks the lines of docs/cli.md's transcript section.
	transcript bool
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.file, c.line, c.text) }

// outputLineRE matches what the binary prints ("sctp-rdma serve: ..."),
// not a command.
var outputLineRE = regexp.MustCompile(`^sctp-rdma( [\w-]+)?:`)

// docCommands extracts every command line of the code blocks of
// README.md and docs/*.md, a line ending in "\\" joined with the next:
// "$ " prompts, trailing "&", "# comments" and "(annotations)" after a
// run of spaces removed.
func docCommands(t *testing.T, root string) []docCommand {
	files := []string{"README.md"}
	md, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	for _, m := range md {
		files = append(files, filepath.Join("docs", filepath.Base(m)))
	}
	var out []docCommand
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		in, transcript := false, false
		prose := ""
		// cont holds the lines of a command continued with "\" so far,
		// from line contAt (0-based).
		cont, contAt := "", 0
		for i, l := range strings.Split(string(b), "\n") {
			tr := strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(tr, "<!-- transcript: begin"):
				transcript = true
			case strings.HasPrefix(tr, "<!-- transcript: end"):
				transcript = false
			}
			if strings.HasPrefix(tr, "```") {
				in, cont = !in, ""
				continue
			}
			if !in {
				if tr != "" {
					prose = tr
				}
				continue
			}
			at := i
			if cont != "" {
				tr, at = cont+" "+tr, contAt
			}
			if body, ok := strings.CutSuffix(tr, "\\"); ok {
				if cont == "" {
					contAt = i
				}
				cont = strings.TrimSpace(body)
				continue
			}
			cont = ""
			tr = strings.TrimPrefix(tr, "$ ")
			if !strings.HasPrefix(tr, "sctp-rdma ") || outputLineRE.MatchString(tr) {
				continue
			}
			if i := strings.Index(tr, " #"); i >= 0 {
				tr = tr[:i]
			}
			if i := strings.Index(tr, "   ("); i >= 0 {
				tr = tr[:i]
			}
			tr = strings.TrimSuffix(strings.TrimSpace(tr), " &")
			args := shellSplit(tr)[1:]
			out = append(out, docCommand{file: f, line: at + 1, text: tr, args: args, prose: prose, transcript: transcript})
		}
	}
	return out
}

// TestDocCommandsJoinsContinuations: a command continued over lines with
// "\\" is one command, numbered by its first line; a fence ends it.
func TestDocCommandsJoinsContinuations(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "docs"), 0o755))
	readme := "Run:\n\n```\n$ sctp-rdma bench --size 64K \\\n    --duration 5 \\\n    127.0.0.1 write\nsctp-rdma ping \\\n```\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), []byte(readme), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "docs", "x.md"), []byte("```\nsctp-rdma demo\n```\n"), 0o644))
	cmds := docCommands(t, root)
	require.Len(t, cmds, 2)
	assert.Equal(t, "sctp-rdma bench --size 64K --duration 5 127.0.0.1 write", cmds[0].text)
	assert.Equal(t, []string{"bench", "--size", "64K", "--duration", "5", "127.0.0.1", "write"}, cmds[0].args)
	assert.Equal(t, 4, cmds[0].line)
	assert.Equal(t, "Run:", cmds[0].prose)
	assert.Equal(t, []string{"demo"}, cmds[1].args, "the dangling continuation ended at its fence")
}

// shellSplit splits a command line at spaces, keeping double-quoted runs
// together (the docs quote nothing else).
func shellSplit(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, have = !quoted, true
		case r == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// isSynopsis: a usage line with placeholders, not a runnable command.
func isSynopsis(args []string) bool {
	for _, a := range args {
		if strings.ContainsAny(a, "[]") || a == "..." || a == "N" || a == "L" || a == "D" || a == "ADDR" || a == "DIR" {
			return true
		}
	}
	return false
}

// definedFlags are the flags `sctp-rdma cmd -h` lists.
func definedFlags(t *testing.T, cmd string) map[string]bool {
	code, out, _ := runCLI(cmd, "-h")
	require.Equal(t, 0, code, cmd)
	m := map[string]bool{}
	for _, f := range regexp.MustCompile(`(?m)^  -(\S+)`).FindAllStringSubmatch(out, -1) {
		m[f[1]] = true
	}
	return m
}

// docExitRE reads the documented exit status of a transcript case.
var docExitRE = regexp.MustCompile(`exit status (\d+)`)

// TestDocsCommands runs every `sctp-rdma` command line quoted in a code
// block of README.md and docs/*.md (docs/cli.md says how): synopses are
// checked for their flags; harness, --emulate and --secure lines are
// parsed and checked only (checkOnly); every other line runs, serve
// in-process on a free port, clients against the page's own server or a
// test server of their --llp (the transcript's :18515, :18516 and :18599
// are sctp-native, mpa and a closed port), cut to 0.3 s or -n 20, and
// must exit as the page says. The transcript's freeze, stop and Ctrl-C
// cases run without the signal (TestTranscripts does those).
func TestDocsCommands(t *testing.T) {
	root, err := vmtest.RepoRoot()
	require.NoError(t, err)
	cmds := docCommands(t, root)
	require.Greater(t, len(cmds), 20, "the docs quote commands")
	dir := t.TempDir()
	writeDocKeys(t, dir)

	fixtures := map[string]string{} // --llp → address of a test server
	fixture := func(llp string) string {
		if a, ok := fixtures[llp]; ok {
			return a
		}
		addr, stop := serve(t, "--llp", llp)
		t.Cleanup(func() { stop() })
		fixtures[llp] = addr
		return addr
	}
	closed := func() string {
		l, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		a := l.LocalAddr().String()
		require.NoError(t, l.Close())
		return a
	}()
	docServers := map[string]map[string]string{} // file → documented listen address → real one
	var ran, parsed, synopses int

	for _, c := range cmds {
		c := c
		require.NotEmpty(t, c.args, c.String())
		sub := c.args[0]
		if isSynopsis(c.args) {
			defined := definedFlags(t, sub)
			for _, a := range c.args[1:] {
				flag := strings.Trim(a, "[]")
				name := strings.TrimLeft(flag, "-")
				if !strings.HasPrefix(flag, "-") || name == "" {
					continue
				}
				assert.True(t, defined[name], "%v: %s is not a flag of sctp-rdma %s", c, flag, sub)
			}
			synopses++
			continue
		}
		llp := "sctp-native"
		for i, a := range c.args {
			if (a == "--llp" || a == "-d") && i+1 < len(c.args) {
				llp = c.args[i+1]
			}
		}
		args := rewriteFiles(c.args, dir)
		secureLine := slices.ContainsFunc(args, func(a string) bool {
			return a == "--cert" || a == "--psk" || a == "--ca" || a == "--secure"
		})
		if sub == "harness" || slices.Contains(args, "--emulate") || secureLine {
			args = resolveAddrs(args, func(string) string { return "127.0.0.1:18515" })
			checkOnly.Store(true)
			code, _, errOut := runCLI(args...)
			checkOnly.Store(false)
			assert.Equal(t, 0, code, "%v (parsed and checked, not run): %s", c, errOut)
			t.Logf("parsed only (root, a VM, minutes or a deployment's keys): %v", c)
			parsed++
			continue
		}
		want := 0
		if m := docExitRE.FindStringSubmatch(c.prose); m != nil {
			want, _ = strconv.Atoi(m[1])
		}
		situational := strings.Contains(c.prose, "SIGSTOP") || strings.Contains(c.prose, "SIGINT") || strings.Contains(c.prose, "SIGTERM")
		if situational {
			want = 0
		}
		if sub == "serve" {
			listen := ":" + defaultPort
			for i, a := range args {
				if a == "--listen" && i+1 < len(args) {
					listen = args[i+1]
				}
			}
			args = setFlag(args, "--listen", "127.0.0.1:0")
			if slices.Contains(args, "--metrics") {
				args = setFlag(args, "--metrics", "127.0.0.1:0")
			}
			addr, stop := serve(t, args[1:]...)
			t.Cleanup(func() { stop() })
			if docServers[c.file] == nil {
				docServers[c.file] = map[string]string{}
			}
			docServers[c.file][normAddr(listen)] = addr
			t.Logf("ran: %v (listening on %s)", c, addr)
			ran++
			continue
		}
		resolve := func(doc string) string {
			if a, ok := docServers[c.file][normAddr(doc)]; ok {
				return a
			}
			switch {
			case situational:
				return fixture(llp)
			case doc == "127.0.0.1:18599":
				return closed
			case doc == "127.0.0.1:18516":
				return fixture("mpa")
			case doc == "127.0.0.1:18515" && c.transcript:
				return fixture("sctp-native")
			case doc == "HOST" || normAddr(doc) == "127.0.0.1:"+defaultPort:
				return fixture(llp)
			}
			t.Errorf("%v: no server in %s listens on %s", c, c.file, doc)
			return doc
		}
		args = resolveAddrs(args, resolve)
		args = shorten(args)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		var out, errOut lockedBuffer
		code := runCtx(ctx, args, &out, &errOut)
		cancel()
		assert.Equal(t, want, code, "%v: ran as %q: %s", c, args, errOut.String())
		t.Logf("ran: %v: exit %d", c, code)
		ran++
	}
	t.Logf("%d command lines: %d ran, %d parsed and checked only, %d synopses checked for their flags", len(cmds), ran, parsed, synopses)
	assert.Positive(t, ran)
}

// normAddr gives a documented address its host and default port.
func normAddr(a string) string {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		h, p = a, defaultPort
	}
	if h == "" {
		h = "127.0.0.1"
	}
	return net.JoinHostPort(h, p)
}

// resolveAddrs replaces the server address of a client command (its
// --connect, -a, or the positional HOST[:PORT]) by resolve's.
func resolveAddrs(args []string, resolve func(string) string) []string {
	out := slices.Clone(args)
	valued := map[string]bool{}
	for i := 1; i < len(out); i++ {
		a := out[i]
		switch {
		case a == "--connect" || a == "-a":
			if i+1 < len(out) {
				out[i+1] = resolve(out[i+1])
				valued[out[i+1]] = true
				i++
			}
		case strings.HasPrefix(a, "-"):
			if i+1 < len(out) && !strings.HasPrefix(out[i+1], "-") && takesValue(out[0], a) {
				i++
			}
		case a == "HOST" || strings.HasPrefix(a, "127.0.0.1") || strings.HasPrefix(a, "192.0.2."):
			out[i] = resolve(a)
		}
	}
	return out
}

// takesValue reports whether flag a of command sub takes a value (a
// boolean flag does not).
func takesValue(sub, a string) bool {
	switch strings.TrimLeft(a, "-") {
	case "json", "lat", "bidir", "b", "e", "events", "a", "F", "report_gbits", "secure", "no-offload",
		"sctp-allow-missing-ali", "no-sweep", "no-secure", "wan", "c", "v":
		return sub == "ping" && a == "-a"
	}
	return true
}

// setFlag sets flag's value in args, adding it if absent.
func setFlag(args []string, flag, v string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if a == flag && i+1 < len(out) {
			out[i+1] = v
			return out
		}
	}
	return append(out, flag, v)
}

// shorten cuts a documented run to a test's length: --duration or -D to
// 0.3 s, and -n 20 for a bench that names no iterations.
func shorten(args []string) []string {
	out := slices.Clone(args)
	timed := false
	for i, a := range out {
		if (a == "--duration" || a == "-D") && i+1 < len(out) {
			out[i+1] = "0.3"
			timed = true
		}
	}
	if out[0] == "bench" && !timed && !slices.Contains(out, "-n") && !slices.Contains(out, "--iters") {
		out = append(out[:1], append([]string{"-n", "20"}, out[1:]...)...)
	}
	if out[0] == "demo" && len(out) == 1 {
		out = append(out, "--streams", "3", "--size", "4K")
	}
	return out
}

// rewriteFiles points the file arguments of a command (captures,
// profiles, reports, key files) into dir.
func rewriteFiles(args []string, dir string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		switch a {
		case "--pcap", "--cpuprofile", "--out", "--plots", "--cert", "--key", "--ca", "--psk", "--trace":
			if i+1 < len(out) && !filepath.IsAbs(out[i+1]) {
				out[i+1] = filepath.Join(dir, filepath.Base(out[i+1]))
			}
		}
	}
	return out
}

// writeDocKeys writes the key files docs/security.md names into dir:
// server.crt/.key, client.crt/.key, clients.crt (the client's
// certificate, for the server to trust) and key.hex.
func writeDocKeys(t *testing.T, dir string) {
	gen := t.TempDir()
	srv, cl, err := secure.GenerateSelfSigned(gen, "localhost")
	require.NoError(t, err)
	cp := func(from, to string) {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, to), b, 0o600))
	}
	cp(srv.Cert, "server.crt")
	cp(srv.Key, "server.key")
	cp(cl.Cert, "client.crt")
	cp(cl.Key, "client.key")
	cp(cl.Cert, "clients.crt")
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.hex"), []byte(hex.EncodeToString(k)+"\n"), 0o600))
}
