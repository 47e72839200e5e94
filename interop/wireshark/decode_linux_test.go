package wireshark

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/internal/rdmapconf"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// repoRoot finds the module root (for scripts/).
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "go.mod not found")
		dir = parent
	}
}

// ensureTshark installs tshark through the project's script (idempotent).
func ensureTshark(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("full tier only (make test): needs tshark from apt")
	}
	out, err := exec.Command(filepath.Join(repoRoot(t), "scripts", "tshark-setup.sh")).CombinedOutput()
	require.NoError(t, err, "scripts/tshark-setup.sh: %s", out)
}

// capture runs tshark on lo with a capture filter until stop is called,
// and returns the pcap path.
type capture struct {
	cmd     *exec.Cmd
	path    string
	errb    bytes.Buffer
	stopped bool
}

func startCapture(t *testing.T, filter string) *capture {
	t.Helper()
	dir := t.TempDir()
	if keep := os.Getenv("WIRESHARK_KEEP"); keep != "" {
		// WIRESHARK_KEEP=dir keeps the captures for a look in Wireshark.
		dir = keep
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	c := &capture{path: filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".pcapng")}
	c.cmd = exec.Command("tshark", "-i", "lo", "-B", "64", "-f", filter, "-w", c.path, "-q")
	stderr, err := c.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	// dumpcap reports "Capturing on 'Loopback: lo'" once the filter is set.
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			c.errb.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "Capture started") {
				once = true
				close(ready)
			}
		}
		if !once {
			close(ready)
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
		t.Fatalf("tshark did not start capturing: %s", c.errb.String())
	}
	return c
}

func (c *capture) stop(t *testing.T) string {
	t.Helper()
	if c.stopped {
		return c.path
	}
	c.stopped = true
	time.Sleep(300 * time.Millisecond) // let the last packets reach the ring
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	return c.path
}

// decoded is what tshark made of one capture.
type decoded struct {
	frames     int            // packets captured
	fpdus      int            // MPA FPDUs decoded
	crcChecked int            // FPDUs whose CRC tshark checked
	crcGood    int            // ... and found good
	crcBad     int            // ... found bad
	malformed  []string       // packets tshark marked malformed
	opcodes    map[string]int // RDMAP opcodes seen
	requests   int            // MPA Request frames
	replies    int            // MPA Reply frames
	markers    int            // FPDUs with Markers decoded
	expertErrs []string       // expert infos of severity error
}

// decode runs tshark over path: one line per packet with the fields
// needed, occurrences separated by commas.
func decode(t *testing.T, path string) decoded {
	t.Helper()
	fields := []string{"frame.number", "_ws.malformed", "iwarp_mpa.fpdu", "iwarp_mpa.crc_check",
		"iwarp_rdma.opcode", "iwarp_mpa.req", "iwarp_mpa.rep", "iwarp_mpa.markers", "_ws.expert.severity", "_ws.expert.message"}
	// RPC-over-RDMA's heuristic would try to parse our test payloads as
	// its own ULP messages (and call short ones malformed): it is not the
	// ULP here.
	args := []string{"-r", path, "--disable-protocol", "rpcordma", "-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, err := exec.Command("tshark", args...).Output()
	require.NoError(t, err)
	d := decoded{opcodes: map[string]int{}}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		require.Len(t, f, len(fields), line)
		d.frames++
		if f[1] != "" {
			d.malformed = append(d.malformed, "frame "+f[0]+": "+f[9])
		}
		d.fpdus += count(f[2])
		d.crcChecked += count(f[3])
		for _, op := range split(f[4]) {
			d.opcodes[op]++
		}
		d.requests += count(f[5])
		d.replies += count(f[6])
		d.markers += count(f[7])
		sev, msg := split(f[8]), split(f[9])
		for i, s := range sev {
			// Severity values (epan/proto.h): chat 0x200000, note
			// 0x400000, warn 0x600000, error 0x800000.
			if v, err := strconv.ParseUint(s, 0, 32); err == nil && v >= 0x00600000 {
				m := ""
				if i < len(msg) {
					m = msg[i]
				}
				if tcpAnalysis(m) {
					continue // the host's TCP, not our MPA
				}
				d.expertErrs = append(d.expertErrs, "frame "+f[0]+": "+m)
			}
		}
	}
	// The verdict on each CRC is only in the text of the CRC check item:
	// "CRC check: 0x… (Good CRC32)" or "(Bad CRC32) …".
	args = []string{"-r", path, "--disable-protocol", "rpcordma", "-V"}
	out, err = exec.Command("tshark", args...).Output()
	require.NoError(t, err)
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, "CRC check:") {
			continue
		}
		switch {
		case strings.Contains(line, "(Good CRC32)"):
			d.crcGood++
		default:
			d.crcBad++
		}
	}
	return d
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func count(s string) int { return len(split(s)) }

// endpointConfig derives the RDMAP configuration from the negotiated MPA
// parameters: IRD/ORD (RFC 6581 §9.1) and the RTR (RFC 6581 §9.2).
func endpointConfig(p mpa.Params) rdmap.EndpointConfig {
	cfg := rdmap.EndpointConfig{}
	if p.Enhanced && p.IRD != iwarp.NoNegotiation {
		cfg.IRD = int(p.IRD)
	}
	if p.Enhanced && p.ORD != iwarp.NoNegotiation {
		cfg.ORD = int(p.ORD)
	}
	rdmapconf.SetRTR(&cfg, p.Initiator, p.PeerToPeer, iwarp.RTR(p.RTR))
	return cfg
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// exchange connects cli to srv over TCP on 127.0.0.1 (captured), runs
// every RDMAP operation with data checks, then ends the stream with a
// Terminate provoked by a Write to an STag the responder never issued
// (RFC 5040 §7.2, RFC 5041 §7.1). It returns the pcap.
func exchange(t *testing.T, cli, srv mpa.Config) string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ln, err := mpa.Listen("tcp", "127.0.0.1:0", &srv)
	require.NoError(t, err)
	defer ln.Close()
	_, portStr, _ := strings.Cut(ln.Addr().String(), ":")
	port, _ := strconv.Atoi(portStr)
	capt := startCapture(t, fmt.Sprintf("tcp port %d", port))
	t.Cleanup(func() { capt.stop(t) }) // after a failure; a no-op otherwise

	type res struct {
		c   *mpa.Conn
		err error
	}
	acc := make(chan res, 1)
	go func() { c, err := ln.Accept(ctx); acc <- res{c, err} }()
	cc, err := mpa.Dial(ctx, "tcp", ln.Addr().String(), &cli)
	require.NoError(t, err)
	r := <-acc
	require.NoError(t, r.err)
	sc := r.c

	dev := new(rdmap.Device)
	cpd, spd := dev.AllocPD(), dev.AllocPD()
	cep, err := cpd.NewEndpoint(cc, endpointConfig(cc.Params()))
	require.NoError(t, err)
	sep, err := spd.NewEndpoint(sc, endpointConfig(sc.Params()))
	require.NoError(t, err)
	const size = 20000 // several FPDUs per message at the loopback MSS
	target := make([]byte, size+8)
	tmr, err := spd.Register(target, rdmap.RemoteWrite|rdmap.RemoteRead|rdmap.RemoteAtomic|rdmap.LocalWrite,
		rdmap.MROption{Endpoint: sep})
	require.NoError(t, err)
	inv, err := spd.Register(make([]byte, 64), rdmap.RemoteWrite, rdmap.MROption{Endpoint: sep}, rdmap.MROption{RemoteInvalidate: true})
	require.NoError(t, err)
	recv := make([][]byte, 8)
	for i := range recv {
		recv[i] = make([]byte, size)
		require.NoError(t, sep.PostRecv(uint64(i), recv[i]))
	}
	require.NoError(t, sep.Start())
	require.NoError(t, cep.Start())

	// RDMA Write and Read (RFC 5040 §5.1, §5.2).
	src := pattern(size, 1)
	require.NoError(t, errOf(cep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: src, RemoteSTag: tmr.STag()})))
	sink, err := cpd.Register(make([]byte, size), rdmap.LocalWrite)
	require.NoError(t, err)
	require.NoError(t, errOf(cep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: sink, Length: size, RemoteSTag: tmr.STag()})))
	require.Equal(t, src, sink.Bytes())

	// The Send family (RFC 5040 §5.3) and Immediate Data (RFC 7306 §6).
	sends := []rdmap.SendWR{
		{Op: rdmap.WRSend, Local: pattern(size, 2)},
		{Op: rdmap.WRSend, Solicited: true, Local: pattern(100, 3)},
		{Op: rdmap.WRSend, Local: nil},
		{Op: rdmap.WRSend, Invalidate: true, Local: pattern(7, 4), InvalidateSTag: inv.STag()},
		{Op: rdmap.WRImmediate, Imm: 0x1122334455667788, Solicited: true},
		{Op: rdmap.WRWriteImm, Local: pattern(3000, 5), RemoteSTag: tmr.STag(), Imm: 42},
	}
	sendEach(ctx, t, cep, sep, sends, recv)
	// Atomics (RFC 7306 §5) on the zeroed word after the Write's range.
	origC, err := cep.Do(ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: tmr.STag(), RemoteTO: size, Add: 5})
	orig := origC.Orig
	require.NoError(t, err)
	require.Zero(t, orig)
	origC, err = cep.Do(ctx, rdmap.SendWR{Op: rdmap.WRCmpSwap, RemoteSTag: tmr.STag(), RemoteTO: size, Compare: 5, CompareMask: ^uint64(0), Swap: 99, SwapMask: ^uint64(0)})
	orig = origC.Orig
	require.NoError(t, err)
	require.Equal(t, uint64(5), orig)

	// A tagged segment for an unknown STag: the responder answers with a
	// Terminate carrying the offending DDP header (RFC 5040 §4.8).
	h := iwarpwire.DDPTaggedHeader{Last: true, RsvdULP: iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), STag: tmr.STag() ^ 0x00FF0000}
	var hb [iwarpwire.DDPTaggedHeaderLen]byte
	require.NoError(t, cc.SendSegment(h.Append(hb[:0]), []byte("intruder")))
	select {
	case <-cep.Done():
	case <-ctx.Done():
		t.Fatal("the initiator did not receive the Terminate")
	}
	var te *rdmap.TerminateError
	require.ErrorAs(t, cep.Err(), &te, "initiator: %v", cep.Err())
	<-sep.Done()
	sent := sep.Stats().HasTerminateSent
	require.True(t, sent)
	<-cc.Done()
	<-sc.Done()
	return capt.stop(t)
}

// TestTsharkDecodesOurMPA: tshark decodes every FPDU we send, in each MPA
// mode, with no malformed packet, no expert error, and a good CRC on every
// FPDU when CRCs are on (RFC 5044 §4.4, §7.1; RFC 6581).
// tcpAnalysis reports an expert message of Wireshark's TCP sequence
// analysis: a retransmission, a duplicate or selective acknowledgement of
// the loopback TCP of a loaded host (seen once: "D-SACK Sequence"). These
// judge the kernel's TCP, not the MPA it carries, and are left out.
func tcpAnalysis(m string) bool {
	for _, s := range []string{"D-SACK", "retransmission", "Retransmission", "Dup ACK", "Out-Of-Order",
		"previous segment not captured", "ACKed segment that wasn't captured", "Spurious", "window is full", "Window full", "Zero window"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func TestTsharkDecodesOurMPA(t *testing.T) {
	ensureTshark(t)
	scenarios := []struct {
		name     string
		cli, srv mpa.Config
		crc      bool
		markers  bool
		// coalesced: FPDUs much smaller than the MSS, so TCP packs several
		// into one segment; tshark 4.0's MPA dissector decodes only an FPDU
		// that starts a segment, loses the FPDU boundaries after such a
		// segment and shows the rest as TCP (no error). Only what it
		// decodes is checked.
		coalesced bool
	}{
		{"rev2 enhanced CRC", mpa.Config{Enhanced: true}, mpa.Config{}, true, false, false},
		{"rev2 no CRC", mpa.Config{Enhanced: true, NoCRC: true}, mpa.Config{NoCRC: true}, false, false, false},
		{"rev2 CRC markers both ways", mpa.Config{Enhanced: true, Markers: true}, mpa.Config{Markers: true}, true, true, false},
		{"rev1 CRC markers", mpa.Config{Revision: 1, Markers: true}, mpa.Config{Revision: 1, Markers: true}, true, true, false},
		{"rev2 CRC markers, 1000-octet FPDUs", mpa.Config{Enhanced: true, Markers: true, MaxMULPDU: 1000},
			mpa.Config{Markers: true, MaxMULPDU: 1000}, true, true, true},
		{"rev2 peer-to-peer RTR", mpa.Config{Enhanced: true, PeerToPeer: true}, mpa.Config{}, true, false, false},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			pcap := exchange(t, sc.cli, sc.srv)
			d := decode(t, pcap)
			t.Logf("%d packets, %d FPDUs, CRC checked %d good %d bad %d, markers in %d, opcodes %v",
				d.frames, d.fpdus, d.crcChecked, d.crcGood, d.crcBad, d.markers, d.opcodes)
			assert.Empty(t, d.malformed, "malformed packets")
			assert.Empty(t, d.expertErrs, "expert warnings or errors")
			assert.Equal(t, 1, d.requests, "one MPA Request")
			assert.Equal(t, 1, d.replies, "one MPA Reply")
			assert.GreaterOrEqual(t, d.fpdus, 16, "every message decoded as an FPDU")
			if sc.coalesced {
				assert.Zero(t, d.crcBad, "bad CRCs")
				assert.Equal(t, d.fpdus, d.crcGood, "every decoded FPDU's CRC good")
				return
			}
			assert.Zero(t, d.crcBad, "bad CRCs")
			if sc.crc {
				assert.Equal(t, d.fpdus, d.crcGood, "every FPDU's CRC checked good")
			} else {
				assert.Zero(t, d.crcChecked, "no CRC checked when CRCs are off")
			}
			if sc.markers {
				assert.Positive(t, d.markers, "markers decoded")
			}
			for _, op := range []string{"0x00", "0x01", "0x02", "0x03", "0x04", "0x05", "0x07", "0x08", "0x09", "0x0a", "0x0b"} {
				assert.Positive(t, d.opcodes[op], "RDMAP opcode %s decoded", op)
			}
		})
	}
}

// sendEach posts each of sends on cep in turn and checks its completion and
// the receive completion at sep: the message in recv (indexed by receive
// WR ID) or, for Immediate Data and Write with Immediate, the immediate.
func sendEach(ctx context.Context, t *testing.T, cep, sep *rdmap.Endpoint, sends []rdmap.SendWR, recv [][]byte) {
	t.Helper()
	for i, wr := range sends {
		wr.ID = uint64(i)
		require.NoError(t, errOf(cep.PostSend(wr)))
		c, err := cep.Config().SendCQ.Poll(ctx)
		require.NoError(t, err)
		require.NoError(t, c.Err, "%v", wr.Op)
		rc, err := sep.Config().RecvCQ.Poll(ctx)
		require.NoError(t, err)
		require.NoError(t, rc.Err)
		if wr.Op != rdmap.WRImmediate && wr.Op != rdmap.WRWriteImm {
			require.Equal(t, string(wr.Local), string(recv[rc.WRID][:rc.Length]), "%v", wr.Op)
		} else {
			require.Equal(t, wr.Imm, rc.Imm)
		}
	}
}
