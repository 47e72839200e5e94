package rdmap

import (
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An untagged DDP header (RFC 5041 §4.3): T=0 L=1 DV=01, RsvdULP = Read
// Request control byte + 4 zero octets, QN 1, MSN 5, MO 0.
var termUntaggedDDP = []byte{0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0}

// A tagged DDP header (RFC 5041 §4.2): T=1 L=1 DV=01, RDMA Write control,
// STag 0x01020304, TO 0x10.
var termTaggedDDP = []byte{0xc1, 0x40, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0x10}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// RFC 5040 §4.8 Figures 7 and 8: Layer|EType, Error Code, M D R + 5 reserved
// bits, 8 reserved bits; then segment length, DDP header, RDMA header.
func TestTerminate_RFC5040_4_8_Figure7(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want termHeader
	}{
		{
			name: "local catastrophic, no headers",
			in:   []byte{0x00, 0x00, 0x00, 0x00},
			want: termHeader{Code: iwarp.Term.LocalCatastrophic},
		},
		{
			name: "DDP tagged invalid STag with tagged header (M,D)",
			in:   cat([]byte{0x11, 0x00, 0xc0, 0x00}, []byte{0x00, 0x40}, termTaggedDDP),
			want: termHeader{Code: iwarp.Term.DDPInvalidSTag, M: true, D: true, SegmentLen: 64, DDPHeader: termTaggedDDP},
		},
		{
			name: "RDMA remote protection invalid STag with Read Request (M,D,R)",
			in:   cat([]byte{0x01, 0x00, 0xe0, 0x00}, []byte{0x00, 0x2e}, termUntaggedDDP, readReqImage),
			want: termHeader{Code: iwarp.Term.InvalidSTag, M: true, D: true, R: true, SegmentLen: 46, DDPHeader: termUntaggedDDP,
				RDMAHeader: readRequest{SinkSTag: 0x11223344, SinkTO: 0x100001000, Size: 65536, SrcSTag: 0xaabbccdd, SrcTO: 0xfffffffffffff000}},
		},
		{
			name: "remote operation unexpected opcode, D without M",
			in:   cat([]byte{0x02, 0x06, 0x40, 0x00}, []byte{0x00, 0x00}, termUntaggedDDP),
			want: termHeader{Code: iwarp.Term.UnexpectedOpcode, D: true, DDPHeader: termUntaggedDDP},
		},
		{
			name: "M without D carries only the length",
			in:   []byte{0x12, 0x05, 0x80, 0x00, 0x12, 0x34},
			want: termHeader{Code: iwarp.Term.DDPMessageTooLong, M: true, SegmentLen: 0x1234},
		},
		{
			name: "LLP code, reserved bits ignored",
			in:   []byte{0x20, 0x06, 0x1f, 0xff},
			want: termHeader{Code: iwarp.Term.InsufficientIRD},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := parseTermHeader(tc.in)
			require.NoError(t, err)
			assert.Equal(t, len(tc.in), n)
			if len(tc.want.DDPHeader) == 0 {
				tc.want.DDPHeader = nil
			}
			assert.Equal(t, tc.want, got)
			out := got.append(nil)
			want := append([]byte{}, tc.in...)
			want[2] &= 0xe0 // reserved bits are sent as zero
			want[3] = 0
			assert.Equal(t, want, out)
			assert.Equal(t, len(out), got.len())
		})
	}
}

func TestTerminate_Malformed(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"short control", []byte{0x00, 0x00, 0x00}},
		{"M without length", []byte{0x11, 0x00, 0x80, 0x00, 0x00}},
		{"D without header", []byte{0x11, 0x00, 0x40, 0x00, 0x00, 0x10}},
		{"tagged header truncated by T bit", cat([]byte{0x11, 0x00, 0x40, 0x00, 0x00, 0x10}, termTaggedDDP[:13])},
		// T bit clear: 18 octets needed, only the 14 of a tagged header present.
		{"untagged T bit but 14 octets", cat([]byte{0x12, 0x01, 0x40, 0x00, 0x00, 0x10}, termUntaggedDDP[:14])},
		{"R without D", cat([]byte{0x01, 0x00, 0x20, 0x00}, readReqImage)},
		{"R header truncated", cat([]byte{0x01, 0x00, 0x60, 0x00, 0, 46}, termUntaggedDDP, readReqImage[:27])},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, n, err := parseTermHeader(tc.in)
			var pe *protocolError
			require.ErrorAs(t, err, &pe)
			assert.Zero(t, n)
		})
	}
}

func TestTerminate_AppendNoAlloc(t *testing.T) {
	tm := termHeader{Code: iwarp.Term.InvalidSTag, M: true, D: true, R: true, SegmentLen: 46, DDPHeader: termUntaggedDDP}
	buf := make([]byte, 0, terminateMaxLen)
	assert.Equal(t, terminateMaxLen, tm.len())
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = tm.append(buf[:0]) }))
}

func FuzzTerminate(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0})
	f.Add(cat([]byte{0x11, 0x00, 0xc0, 0x00}, []byte{0x00, 0x40}, termTaggedDDP))
	f.Add(cat([]byte{0x01, 0x00, 0xe0, 0x00}, []byte{0x00, 0x2e}, termUntaggedDDP, readReqImage))
	f.Add([]byte{0x01, 0x00, 0x20, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		tm, n, err := parseTermHeader(b)
		if err != nil {
			return
		}
		require.LessOrEqual(t, n, len(b))
		out := tm.append(nil)
		require.Equal(t, n, len(out))
		require.Equal(t, n, tm.len())
		require.Equal(t, b[:2], out[:2])
		require.Equal(t, b[4:n], out[4:])
		if tm.D {
			require.Contains(t, []int{iwarpwire.DDPTaggedHeaderLen, iwarpwire.DDPUntaggedHeaderLen}, len(tm.DDPHeader))
		}
	})
}
