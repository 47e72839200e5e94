package usrsctp

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// capture runs tshark on lo with a capture filter (the real wire, not
// what either stack reports of it) until stop.
type capture struct {
	cmd     *exec.Cmd
	path    string
	errb    bytes.Buffer
	stopped bool
}

// startCapture returns once dumpcap has set its filter. USRSCTP_KEEP=dir
// keeps the pcapng files for a look in Wireshark.
func startCapture(t *testing.T, filter string) *capture {
	t.Helper()
	dir := t.TempDir()
	if keep := os.Getenv("USRSCTP_KEEP"); keep != "" {
		dir = keep
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	c := &capture{path: filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".pcapng")}
	// -B: a 64 MiB kernel capture buffer, so that a loaded host loses no
	// packet of the bulk cases to the capture (the default 2 MiB did).
	c.cmd = exec.Command("tshark", "-i", "lo", "-B", "64", "-f", filter, "-w", c.path, "-q")
	stderr, err := c.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
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
	t.Cleanup(func() { c.stop() })
	return c
}

// stop ends the capture and returns the file.
func (c *capture) stop() string {
	if c.stopped {
		return c.path
	}
	c.stopped = true
	time.Sleep(300 * time.Millisecond) // the last packets reach the ring
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

// Chunk types (RFC 9260 §3.2, RFC 6525 §3.1).
const (
	chunkData         = 0
	chunkInit         = 1
	chunkInitAck      = 2
	chunkSACK         = 3
	chunkHeartbeat    = 4
	chunkHeartbeatAck = 5
	chunkAbort        = 6
	chunkShutdown     = 7
	chunkShutdownAck  = 8
	chunkError        = 9
	chunkCookieEcho   = 10
	chunkCookieAck    = 11
	chunkShutdownComp = 14
	chunkReconfig     = 130
)

// dir is who sent a packet.
type dir int

const (
	fromUsrsctp dir = iota
	fromNative
)

func (d dir) String() string {
	if d == fromUsrsctp {
		return "usrsctp"
	}
	return "sctp-native"
}

// decoded is what tshark made of a capture.
type decoded struct {
	frames     int
	malformed  []string
	badCRC     []string
	unchecked  int            // packets whose CRC tshark did not verify
	chunks     [2]map[int]int // per sender, chunk type -> count
	fragments  [2]int         // DATA chunks that are not a whole message
	unordered  [2]int         // DATA chunks with the U bit
	ordered    [2]int         // ... without
	expertErrs []string       // expert infos of severity warning or above
	// largeGaps counts usrsctp's SACKs that Wireshark notes for gap-acking
	// more than 100 TSNs (largeGapNote), not in expertErrs.
	largeGaps int
	results   map[string]int    // RE-CONFIG response results seen
	causes    [2]map[string]int // ERROR/ABORT cause codes per sender
}

// largeGapNote is Wireshark's warning on a SACK that gap-acknowledges more
// than 100 TSNs: an analysis of its content, not a malformation. usrsctp
// sends such SACKs when the bulk cases overrun its UDP socket's default
// receive buffer (the drops bulk logs) while many packets are in flight,
// whatever the sender (docs/usrsctp-interop.md), so it is counted and logged, not
// an error.
const largeGapNote = "More than 100 TSNs were gap-acknowledged in this SACK."

// decode runs tshark over path with UDP port usrsctpPort decoded as SCTP
// over UDP (RFC 6951) and CRC32c verified (RFC 9260 §6.8).
func decode(t *testing.T, path string, usrsctpPort int) decoded {
	t.Helper()
	fields := []string{"frame.number", "_ws.malformed", "udp.srcport", "sctp.checksum.status",
		"sctp.chunk_type", "sctp.data_b_bit", "sctp.data_e_bit", "sctp.data_u_bit",
		"_ws.expert.severity", "_ws.expert.message", "sctp.parameter_reconfig_response_result", "sctp.cause_code"}
	args := []string{"-r", path, "-d", fmt.Sprintf("udp.port==%d,sctp", usrsctpPort),
		"-o", "sctp.checksum:crc-32c", "-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("tshark", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "tshark: %s", stderr.String())
	d := decoded{results: map[string]int{}}
	for i := range d.chunks {
		d.chunks[i] = map[int]int{}
		d.causes[i] = map[string]int{}
	}
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
		from := fromNative
		if f[2] == strconv.Itoa(usrsctpPort) {
			from = fromUsrsctp
		}
		switch f[3] {
		case "1":
		case "2", "":
			d.unchecked++
		default:
			d.badCRC = append(d.badCRC, "frame "+f[0]+" from "+from.String()+": checksum status "+f[3])
		}
		for _, c := range split(f[4]) {
			n, err := strconv.Atoi(c)
			require.NoError(t, err, line)
			d.chunks[from][n]++
		}
		b, e, u := split(f[5]), split(f[6]), split(f[7])
		for i := range b {
			if i < len(e) && !(isTrue(b[i]) && isTrue(e[i])) {
				d.fragments[from]++
			}
			if i < len(u) && isTrue(u[i]) {
				d.unordered[from]++
			} else {
				d.ordered[from]++
			}
		}
		sev, msg := split(f[8]), split(f[9])
		for i, s := range sev {
			// epan/proto.h: chat 0x200000, note 0x400000, warn 0x600000, error 0x800000.
			if v, err := strconv.ParseUint(s, 0, 32); err == nil && v >= 0x00600000 {
				m := ""
				if i < len(msg) {
					m = msg[i]
				}
				if m == largeGapNote && from == fromUsrsctp {
					d.largeGaps++
					continue
				}
				d.expertErrs = append(d.expertErrs, "frame "+f[0]+" from "+from.String()+": "+m)
			}
		}
		for _, r := range split(f[10]) {
			d.results[r]++
		}
		for _, c := range split(f[11]) {
			d.causes[from][c]++
		}
	}
	return d
}

func isTrue(s string) bool { return s == "1" || s == "True" || s == "true" }

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
