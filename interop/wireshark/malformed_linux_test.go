package wireshark

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkCase is one crafted chunk payload and the expert info the dissector
// must attach to it (empty: none of warn or error severity).
type chunkCase struct {
	name    string
	payload []byte
	expert  string
}

// cat joins byte slices.
func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// untagged returns an untagged DDP header (RFC 5041 §4.3) after a DDP-SSN,
// with the given DDP control octet, RDMAP control octet, QN, MSN and MO.
func untagged(ddpCtl, rdmapCtl byte, qn, msn, mo uint32) []byte {
	return []byte{0, 1, ddpCtl, rdmapCtl, 0, 0, 0, 0,
		byte(qn >> 24), byte(qn >> 16), byte(qn >> 8), byte(qn),
		byte(msn >> 24), byte(msn >> 16), byte(msn >> 8), byte(msn),
		byte(mo >> 24), byte(mo >> 16), byte(mo >> 8), byte(mo)}
}

// hexdump writes payloads in text2pcap's input format, one packet each.
func hexdump(payloads [][]byte) string {
	var b strings.Builder
	for _, p := range payloads {
		for off := 0; off < len(p); off += 16 {
			fmt.Fprintf(&b, "%06x", off)
			for _, c := range p[off:min(off+16, len(p))] {
				fmt.Fprintf(&b, " %02x", c)
			}
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// craftPcap writes payloads as SCTP DATA chunks with the given PPID
// (text2pcap -S adds the Ethernet, IPv4 and SCTP headers).
func craftPcap(t *testing.T, ppid int, payloads [][]byte) string {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "chunks.txt")
	require.NoError(t, os.WriteFile(in, []byte(hexdump(payloads)), 0o644))
	out := filepath.Join(dir, fmt.Sprintf("ppid%d.pcap", ppid))
	b, err := exec.Command("text2pcap", "-q", "-S", fmt.Sprintf("5000,5000,%d", ppid), in, out).CombinedOutput()
	require.NoError(t, err, "text2pcap: %s", b)
	return out
}

// checkCases decodes one crafted chunk per packet and checks each: one
// iwarp_sctp item, no Lua error, and the expected expert info.
func checkCases(t *testing.T, ppid int, cases []chunkCase) {
	t.Helper()
	var payloads [][]byte
	for _, c := range cases {
		payloads = append(payloads, c.payload)
	}
	pkts := tsharkPDML(t, craftPcap(t, ppid, payloads))
	require.Len(t, pkts, len(cases))
	for i, c := range cases {
		p := pkts[i]
		assert.Len(t, p.chunks(i+1), 1, "%s: decoded by the dissector", c.name)
		assert.Zero(t, len(p.values("_ws.lua.error")), "%s: Lua error", c.name)
		experts := p.experts()
		if c.expert == "" {
			assert.Empty(t, p.problems(), "%s: experts %v", c.name, experts)
			continue
		}
		assert.Contains(t, experts, c.expert, "%s", c.name)
	}
}

// TestDissectorMalformedSegments_RFC5043_5_2_2 crafts DDP Segment Chunks
// (PPID 16) that break RFC 5043 §5.2.2, RFC 5041 §4, RFC 5040 §4 and
// RFC 7306 §5, §6 and requires an expert info for each, never a Lua error.
func TestDissectorMalformedSegments_RFC5043_5_2_2(t *testing.T) {
	ensureTshark(t)
	send := untagged(0x41, 0x43, 0, 1, 0)
	readReq := untagged(0x41, 0x41, 1, 1, 0)
	term := untagged(0x41, 0x47, 2, 1, 0)
	atomicReq := untagged(0x41, 0x4A, 1, 1, 0)
	atomicResp := untagged(0x41, 0x4B, 3, 1, 0)
	imm := untagged(0x41, 0x48, 0, 1, 0)
	tagged := []byte{0, 1, 0xC1, 0x40, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0, 0, 0, 0, 0x10}
	rr := make([]byte, 28)
	termDDP := []byte{0xC1, 0x40, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0}
	fetchAdd := func(aop byte, to byte) []byte {
		h := make([]byte, 52)
		h[3] = aop
		h[19] = to
		return h
	}
	cases := []chunkCase{
		{"a valid Send", cat(send, []byte("hi")), ""},
		{"a valid tagged Write", cat(tagged, []byte("data")), ""},
		{"one octet, no DDP-SSN", []byte{7}, "iwarp_sctp.truncated"},
		{"DDP-SSN only", []byte{0, 1}, "ddpsctp.empty"},
		{"untagged header cut", send[:12], "ddpsctp.truncated"},
		{"tagged header cut", tagged[:9], "ddpsctp.truncated"},
		{"DDP version 0", cat(untagged(0x40, 0x43, 0, 1, 0), []byte("x")), "ddpsctp.version"},
		{"RDMA version 2", cat(untagged(0x41, 0x83, 0, 1, 0), []byte("x")), "rdmap.version"},
		{"reserved opcode 0xC", cat(untagged(0x41, 0x4C, 0, 1, 0), []byte("x")), "rdmap.reserved_opcode"},
		{"Send sent tagged", cat([]byte{0, 1, 0xC1, 0x43, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, []byte("x")), "rdmap.model"},
		{"Write sent untagged", cat(untagged(0x41, 0x40, 0, 1, 0), []byte("x")), "rdmap.model"},
		{"Send on QN 5", cat(untagged(0x41, 0x43, 5, 1, 0), []byte("x")), "rdmap.qn"},
		{"Read Request cut", cat(readReq, rr[:27]), "rdmap.truncated"},
		{"Read Request with trailing octets", cat(readReq, rr, []byte{1}), "rdmap.extra"},
		{"Read Request with MO 28", cat(untagged(0x41, 0x41, 1, 1, 28), rr), "rdmap.continuation"},
		{"Terminate without header", term, "rdmap.truncated"},
		{"Terminate of 3 octets", cat(term, []byte{0x11, 0, 0xC0}), "rdmap.truncated"},
		{"Terminate M without segment length", cat(term, []byte{0x11, 0, 0x80, 0}), "rdmap.truncated"},
		{"Terminate D without DDP header", cat(term, []byte{0x11, 0, 0x40, 0, 0, 64}), "rdmap.truncated"},
		{"Terminate D with a cut DDP header", cat(term, []byte{0x11, 0, 0x40, 0, 0, 64}, termDDP[:13]), "rdmap.truncated"},
		{"Terminate R without D", cat(term, []byte{0x01, 0, 0x20, 0}, rr), "rdmap.term.r_without_d"},
		{"Terminate R with a cut RDMA header", cat(term, []byte{0x01, 0, 0xE0, 0, 0, 64}, termDDP, rr[:20]), "rdmap.truncated"},
		{"Terminate R at the end", cat(term, []byte{0x01, 0, 0xE0, 0, 0, 64}, termDDP), "rdmap.truncated"},
		{"Terminate of layer 5", cat(term, []byte{0x51, 0, 0, 0}), "rdmap.term.unknown"},
		{"Terminate of RDMA code 0x42", cat(term, []byte{0x01, 0x42, 0, 0}), "rdmap.term.unknown"},
		{"Terminate with trailing octets", cat(term, []byte{0x00, 0, 0, 0, 9}), "rdmap.extra"},
		{"a valid Terminate", cat(term, []byte{0x11, 0, 0xC0, 0, 0, 64}, termDDP), "rdmap.term.cause"},
		{"Atomic Request cut", cat(atomicReq, fetchAdd(0, 0)[:51]), "rdmap.truncated"},
		{"Atomic Request without header", atomicReq, "rdmap.truncated"},
		{"Atomic Request, AOpCode 1", cat(atomicReq, fetchAdd(1, 0)), "rdmap.atomic.bad_opcode"},
		{"Atomic Request, unaligned TO", cat(atomicReq, fetchAdd(0, 4)), "rdmap.atomic.unaligned"},
		{"Atomic Response without header", atomicResp, "rdmap.truncated"},
		{"Atomic Response cut", cat(atomicResp, make([]byte, 11)), "rdmap.truncated"},
		{"Immediate Data of 7 octets", cat(imm, make([]byte, 7)), "rdmap.immediate_len"},
		{"Immediate Data of 0 octets", imm, "rdmap.immediate_len"},
		{"Immediate Data in two segments", cat(untagged(0x01, 0x48, 0, 1, 0), make([]byte, 8)), "rdmap.continuation"},
	}
	checkCases(t, 16, cases)
}

// TestDissectorMalformedSessionControl_RFC5043_5_2_3 crafts DDP Stream
// Session Control chunks (PPID 17) that break RFC 5043 §5.2.3 or RFC 6581
// §7, §9.2 and requires an expert info for each, never a Lua error.
func TestDissectorMalformedSessionControl_RFC5043_5_2_3(t *testing.T) {
	ensureTshark(t)
	big := make([]byte, 513)
	cases := []chunkCase{
		{"a valid Initiate", []byte{0, 0, 0, 1, 'h', 'i'}, ""},
		{"a valid Enhanced Accept", []byte{0, 0, 0, 6, 0, 4, 0, 4}, ""},
		{"a valid empty Reject", []byte{0, 0, 0, 3}, "iwarp_sctp.reject"},
		{"a valid Enhanced Reject without the word", []byte{0, 0, 0, 7, 1}, "iwarp_sctp.reject"},
		{"one octet", []byte{0}, "iwarp_sctp.truncated"},
		{"DDP-SSN only", []byte{0, 0}, "iwarp_sctp.truncated"},
		{"DDP-SSN and half a function code", []byte{0, 0, 0}, "iwarp_sctp.truncated"},
		{"function code 0", []byte{0, 0, 0, 0}, "iwarp_sctp.unknown_function"},
		{"function code 0x009", []byte{0, 0, 0, 9, 1, 2}, "iwarp_sctp.unknown_function"},
		{"Terminate with private data", []byte{0, 3, 0, 4, 1}, "iwarp_sctp.terminate_data"},
		{"Enhanced Initiate with 3 octets", []byte{0, 0, 0, 5, 0, 8, 0}, "iwarp_sctp.missing_irdord"},
		{"Enhanced Accept without private data", []byte{0, 0, 0, 6}, "iwarp_sctp.missing_irdord"},
		{"Initiate with 513 octets", cat([]byte{0, 0, 0, 1}, big), "iwarp_sctp.pdata_too_long"},
		{"Enhanced Initiate, B set without A", []byte{0, 0, 0, 5, 0x40, 8, 0, 8}, "iwarp_sctp.flags_without_a"},
		{"Enhanced Initiate, D set without A", []byte{0, 0, 0, 5, 0, 8, 0x40, 8}, "iwarp_sctp.flags_without_a"},
	}
	checkCases(t, 17, cases)
}

// validChunks returns well-formed chunks of every kind, by PPID.
func validChunks() map[int][][]byte {
	rr := []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 64, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0x20, 0}
	termDDP := []byte{0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0}
	atomic := make([]byte, 52)
	atomic[3] = 2
	return map[int][][]byte{
		16: {
			cat([]byte{0, 1, 0xC1, 0x40, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0, 0, 0, 0, 0x10}, []byte("data")),
			cat(untagged(0x41, 0x43, 0, 1, 0), []byte("send")),
			cat(untagged(0x41, 0x44, 0, 1, 0), []byte("send")),
			cat(untagged(0x41, 0x41, 1, 1, 0), rr),
			cat(untagged(0x41, 0x47, 2, 1, 0), []byte{0x01, 0, 0xE0, 0, 0, 46}, termDDP, rr),
			cat(untagged(0x41, 0x4A, 1, 1, 0), atomic),
			cat(untagged(0x41, 0x4B, 3, 1, 0), make([]byte, 12)),
			cat(untagged(0x41, 0x48, 0, 1, 0), make([]byte, 8)),
		},
		17: {
			{0, 0, 0, 1, 'p', 'd'},
			{0, 0, 0, 5, 0x80, 8, 0xC0, 8, 'p', 'd'},
			{0, 0, 0, 7, 0x3F, 0xFF, 0x3F, 0xFF},
			{0, 3, 0, 4},
		},
	}
}

// TestDissectorTruncatedAndRandomChunks_RFC5043_5_2 decodes every prefix
// of a well-formed chunk of each kind, and thousands of random and
// half-plausible chunks, of both PPIDs: each is decoded by the dissector
// (one iwarp_sctp item) and none raises a Lua error.
func TestDissectorTruncatedAndRandomChunks_RFC5043_5_2(t *testing.T) {
	ensureTshark(t)
	rng := rand.New(rand.NewPCG(5043, 16))
	valid := validChunks()
	for _, ppid := range []int{16, 17} {
		var payloads [][]byte
		for _, v := range valid[ppid] {
			for n := 1; n <= len(v); n++ {
				payloads = append(payloads, v[:n])
			}
		}
		for i := 0; i < 2000; i++ {
			n := 1 + rng.IntN(90)
			p := make([]byte, n)
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			switch i % 3 {
			case 0: // plausible DDP and RDMAP control octets and QN
				if n > 2 {
					p[2] = []byte{0x41, 0xC1, 0x01, 0x81}[rng.IntN(4)]
				}
				if n > 3 {
					p[3] = 0x40 | byte(rng.IntN(16))
				}
				if n > 9 && p[2]&0x80 == 0 {
					p[6], p[7], p[8], p[9] = 0, 0, 0, byte(rng.IntN(5))
				}
			case 1: // plausible function codes
				if n > 3 {
					p[2], p[3] = 0, byte(rng.IntN(9))
				}
			}
			payloads = append(payloads, p)
		}
		pkts := tsharkPDML(t, craftPcap(t, ppid, payloads))
		require.Len(t, pkts, len(payloads))
		bad := 0
		for i, p := range pkts {
			if len(p.chunks(i+1)) != 1 || len(p.values("_ws.lua.error")) > 0 {
				bad++
				if bad < 5 {
					t.Errorf("PPID %d chunk % x: %d items, %d Lua errors", ppid, payloads[i], len(p.chunks(i+1)),
						len(p.values("_ws.lua.error")))
				}
			}
		}
		assert.Zero(t, bad, "PPID %d: chunks not decoded or with a Lua error", ppid)
		assert.True(t, slices.ContainsFunc(pkts, func(p pdmlPacket) bool { return len(p.experts()) > 0 }))
	}
}

// TestDissectorEmptyChunk_RFC5043_5_2_1 hands the dissector DATA chunks
// without a single payload octet (SCTP header and chunk written by hand,
// text2pcap -i 132 adds IPv4): no DDP-SSN, an expert error, no Lua error.
func TestDissectorEmptyChunk_RFC5043_5_2_1(t *testing.T) {
	ensureTshark(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "empty.txt")
	var pkts [][]byte
	for i, ppid := range []byte{16, 17} {
		pkts = append(pkts, []byte{
			0x13, 0x88, 0x13, 0x88, 0, 0, 0, 1, 0, 0, 0, 0, // ports 5000, tag, checksum
			0, 0x07, 0, 16, 0, 0, 0, byte(i + 1), 0, 1, 0, 0, 0, 0, 0, ppid, // DATA, U B E, no payload
		})
	}
	require.NoError(t, os.WriteFile(in, []byte(hexdump(pkts)), 0o644))
	out := filepath.Join(dir, "empty.pcap")
	b, err := exec.Command("text2pcap", "-q", "-i", "132", in, out).CombinedOutput()
	require.NoError(t, err, "text2pcap: %s", b)
	decoded := tsharkPDML(t, out)
	require.Len(t, decoded, 2)
	for i, p := range decoded {
		assert.Len(t, p.chunks(i+1), 1, "packet %d decoded by the dissector", i+1)
		assert.Zero(t, len(p.values("_ws.lua.error")), "packet %d: Lua error", i+1)
		assert.Contains(t, p.experts(), "iwarp_sctp.truncated", "packet %d", i+1)
	}
}
