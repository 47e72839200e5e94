package wireshark

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pluginFile is the shipped dissector, relative to the module root.
const pluginFile = "wireshark/iwarp-sctp.lua"

// pluginPath returns the dissector's absolute path.
func pluginPath(t *testing.T) string { return filepath.Join(repoRoot(t), pluginFile) }

// tsharkWithPlugin returns a tshark command that loads the dissector, with
// a fresh home directory: a copy of the plugin installed in
// ~/.local/lib/wireshark/plugins would be loaded twice (a Lua error), and
// personal preferences could change the decode.
func tsharkWithPlugin(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	home := t.TempDir()
	var full []string
	if len(args) > 0 && args[0] == "-G" { // -G must come first
		full = append(full, args[:2]...)
		args = args[2:]
	}
	full = append(full, "-X", "lua_script:"+pluginPath(t))
	cmd := exec.Command("tshark", append(full, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home)
	return cmd
}

// Expert severities (epan/proto.h): chat 0x200000, note 0x400000, warn
// 0x600000, error 0x800000.
const severityWarn = 0x00600000

// pdmlItem is one <proto> or <field> element of tshark's PDML, in document
// order.
type pdmlItem struct {
	proto bool
	name  string
	show  string
}

// pdmlPacket is one packet of a PDML document.
type pdmlPacket struct {
	items []pdmlItem
}

// tsharkPDML runs tshark with the dissector over pcap (extra arguments
// before the read) and returns its packets. It fails the test if tshark
// fails or writes anything but its root warning to stderr (a Lua script
// that does not load is only reported there).
func tsharkPDML(t *testing.T, pcap string, extra ...string) []pdmlPacket {
	t.Helper()
	args := append(append([]string(nil), extra...), "-r", pcap, "-T", "pdml")
	cmd := tsharkWithPlugin(t, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "tshark: %s", stderr.String())
	requireQuietStderr(t, stderr.String())
	pkts, err := parsePDML(bytes.NewReader(out))
	require.NoError(t, err)
	return pkts
}

// requireQuietStderr accepts only tshark's warning about running as root.
func requireQuietStderr(t *testing.T, stderr string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line == "" || strings.HasPrefix(line, "Running as user ") {
			continue
		}
		t.Fatalf("tshark wrote to stderr: %q", stderr)
	}
}

func parsePDML(r io.Reader) ([]pdmlPacket, error) {
	dec := xml.NewDecoder(r)
	var pkts []pdmlPacket
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return pkts, nil
		}
		if err != nil {
			return nil, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "packet":
			pkts = append(pkts, pdmlPacket{})
		case "proto", "field":
			if len(pkts) == 0 {
				return nil, fmt.Errorf("PDML %s outside a packet", se.Name.Local)
			}
			it := pdmlItem{proto: se.Name.Local == "proto"}
			for _, a := range se.Attr {
				switch a.Name.Local {
				case "name":
					it.name = a.Value
				case "show":
					it.show = a.Value
				}
			}
			p := &pkts[len(pkts)-1]
			p.items = append(p.items, it)
		}
	}
}

// values returns every value of the named field in the packet.
func (p pdmlPacket) values(name string) []string {
	var out []string
	for _, it := range p.items {
		if !it.proto && it.name == name {
			out = append(out, it.show)
		}
	}
	return out
}

// first returns the first value of the named field, or "".
func (p pdmlPacket) first(name string) string {
	if v := p.values(name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// problems lists, for a packet, Lua errors, malformed-packet markers and
// expert infos of severity warn or above.
func (p pdmlPacket) problems() []string {
	var out []string
	msg := ""
	for _, it := range p.items {
		switch {
		case it.name == "_ws.lua.error":
			out = append(out, "Lua error")
		case it.name == "_ws.malformed":
			out = append(out, "malformed")
		case it.name == "_ws.expert.message":
			msg = it.show
		case it.name == "_ws.expert.severity":
			if v, err := strconv.ParseUint(it.show, 0, 32); err == nil && v >= severityWarn {
				out = append(out, "expert: "+msg)
			}
		}
	}
	return out
}

// experts returns the abbreviations of the expert infos this dissector
// added (the field inside each _ws.expert).
func (p pdmlPacket) experts() []string {
	var out []string
	for i, it := range p.items {
		if it.name == "_ws.expert" && i+1 < len(p.items) {
			out = append(out, p.items[i+1].name)
		}
	}
	return out
}

// chunk is one RFC 5043 chunk as the dissector decoded it: the fields of
// the iwarp_sctp, ddpsctp and rdmap protocols that follow one iwarp_sctp
// protocol item.
type chunk struct {
	frame   int
	srcPort int
	fields  map[string][]string
}

// chunks splits a packet into the chunks the dissector decoded.
func (p pdmlPacket) chunks(frame int) []chunk {
	var out []chunk
	src, _ := strconv.Atoi(p.first("udp.srcport"))
	for _, it := range p.items {
		if it.proto && it.name == "iwarp_sctp" {
			out = append(out, chunk{frame: frame, srcPort: src, fields: map[string][]string{}})
			continue
		}
		if len(out) == 0 || it.proto {
			continue
		}
		if strings.HasPrefix(it.name, "iwarp_sctp.") || strings.HasPrefix(it.name, "ddpsctp.") ||
			strings.HasPrefix(it.name, "rdmap.") {
			c := out[len(out)-1]
			c.fields[it.name] = append(c.fields[it.name], it.show)
		}
	}
	return out
}

// has reports whether the chunk carries the field.
func (c chunk) has(name string) bool { return len(c.fields[name]) > 0 }

// uint returns the first value of a numeric field (decimal or 0x-hex).
func (c chunk) uint(t *testing.T, name string) uint64 {
	t.Helper()
	v := c.fields[name]
	require.NotEmpty(t, v, "frame %d: no %s", c.frame, name)
	n, err := strconv.ParseUint(v[0], 0, 64)
	require.NoError(t, err, "frame %d: %s = %q", c.frame, name, v[0])
	return n
}

// str returns the first value of a field, or "".
func (c chunk) str(name string) string {
	if v := c.fields[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}
