package siw

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// perftest's control messages (linux-rdma/perftest 4.5-0.17 as packaged by
// Debian bookworm, "version 6.06" on the wire). With -R every message is
// an RDMA Send on a separate rdma_cm connection (the "comm" QP), received
// into a buffer of sizeof(struct pingpong_dest) = 56 octets; see
// docs/siw-interop.md for the sequence. Integers are big-endian (hton_int,
// htobe32/htobe64), doubles are the big-endian IEEE 754 image (hton_double
// is a byte swap on little-endian hosts), except the credit word, which
// perftest writes in host order.
const (
	// DestLen is sizeof(struct pingpong_dest): lid, out_reads, qpn, psn,
	// rkey (5 × 32 bits), 4 octets of alignment padding, vaddr (64 bits),
	// gid (16 octets), srqn and gid_index (32 bits each).
	DestLen = 56
	// VersionLen is sizeof(user_param->version): perftest's protocol
	// version as a NUL-padded decimal string ("6.06").
	VersionLen = 16
	// IntLen is one hton_int exchange (cycle_buffer, cache_line_size).
	IntLen = 4
	// MTULen is the MTU exchange of peers at version 5.31 or later: the
	// ibv_mtu enum value printed with "%d" into sizeof(char[2]) octets.
	MTULen = 2
	// ReportFieldLen is each xchg_bw_reports field (size, iters at version
	// 5.33 or later, bw_peak, bw_avg, msgRate_avg).
	ReportFieldLen = 8
	// CreditLen is the iWARP Send credit: a 32-bit count of completed
	// receives the ib_send_bw server RDMA-Writes into the client's credit
	// buffer (ctx_set_credit_wqes), in host (little-endian) order.
	CreditLen = 4
	// CtrlMaxLen is the receive buffer perftest posts on its comm QP.
	CtrlMaxLen = DestLen
)

// PerftestVersion is the protocol version string this implementation
// speaks (perftest 4.5-0.17's VERSION).
const PerftestVersion = "6.06"

// minPeerVersion is the oldest peer version whose message formats we
// implement: 5.33 made iters 8 octets, 5.32 added the sys-data exchange,
// 5.31 the 2-octet MTU.
const minPeerVersion = 5.33

// ErrPerftestMsg: a perftest control message has the wrong length or
// content.
var ErrPerftestMsg = errors.New("siw: malformed perftest message")

// Dest is perftest's struct pingpong_dest, the per-QP parameters each side
// advertises. Over iWARP with rdma_cm only RKey, VAddr and OutReads
// matter; perftest fills the rest from its verbs objects.
type Dest struct {
	LID      uint32
	OutReads uint32
	QPN      uint32
	PSN      uint32
	// RKey and VAddr are the STag and Tagged Offset of the advertised
	// buffer: the Write target or Read source of ib_write_bw and
	// ib_read_bw, the Send credit word of ib_send_bw over iWARP.
	RKey     uint32
	VAddr    uint64
	GID      [16]byte
	SRQN     uint32
	GIDIndex int32
}

// Append appends the 56-octet image of d (rdma_write_keys with
// HAVE_ENDIAN: every integer big-endian, the GID as is, the padding after
// rkey zero).
func (d Dest) Append(b []byte) []byte {
	for _, v := range [...]uint32{d.LID, d.OutReads, d.QPN, d.PSN, d.RKey, 0} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	b = binary.BigEndian.AppendUint64(b, d.VAddr)
	b = append(b, d.GID[:]...)
	b = binary.BigEndian.AppendUint32(b, d.SRQN)
	return binary.BigEndian.AppendUint32(b, uint32(d.GIDIndex))
}

// Len is DestLen.
func (Dest) Len() int { return DestLen }

// ParseDest decodes a pingpong_dest. The 4 padding octets after rkey are
// ignored: perftest sends them uninitialised (stack garbage on the wire).
func ParseDest(b []byte) (Dest, int, error) {
	if len(b) != DestLen {
		return Dest{}, 0, fmt.Errorf("%w: pingpong_dest of %d octets, want %d", ErrPerftestMsg, len(b), DestLen)
	}
	be := binary.BigEndian
	d := Dest{LID: be.Uint32(b), OutReads: be.Uint32(b[4:]), QPN: be.Uint32(b[8:]), PSN: be.Uint32(b[12:]),
		RKey: be.Uint32(b[16:]), VAddr: be.Uint64(b[24:]), SRQN: be.Uint32(b[48:]), GIDIndex: int32(be.Uint32(b[52:]))}
	copy(d.GID[:], b[32:48])
	return d, DestLen, nil
}

// AppendVersion appends v NUL-padded to VersionLen octets (perftest
// strncpy's its VERSION into a 16-octet array and sends all of it).
func AppendVersion(b []byte, v string) []byte {
	var f [VersionLen]byte
	copy(f[:VersionLen-1], v)
	return append(b, f[:]...)
}

// ParseVersion decodes a version message: the string before the first NUL
// and its value as perftest reads it (atof).
func ParseVersion(b []byte) (string, float64, error) {
	if len(b) != VersionLen {
		return "", 0, fmt.Errorf("%w: version of %d octets, want %d", ErrPerftestMsg, len(b), VersionLen)
	}
	s := string(b)
	if i := bytes.IndexByte(b, 0); i >= 0 {
		s = string(b[:i])
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return s, 0, fmt.Errorf("%w: version %q is not a number", ErrPerftestMsg, s)
	}
	return s, v, nil
}

// AppendInt appends v as hton_int does.
func AppendInt(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

// ParseInt decodes a hton_int exchange.
func ParseInt(b []byte) (int32, error) {
	if len(b) != IntLen {
		return 0, fmt.Errorf("%w: integer of %d octets, want %d", ErrPerftestMsg, len(b), IntLen)
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// AppendMTU appends the MTU exchange: sprintf("%d") of the ibv_mtu enum
// (1 = 256 … 5 = 4096 octets) cut to MTULen octets, as perftest sends it.
func AppendMTU(b []byte, mtu int) []byte {
	var f [MTULen + 8]byte
	copy(f[:], strconv.Itoa(mtu))
	return append(b, f[:MTULen]...)
}

// ParseMTU decodes the MTU exchange the way perftest does (strtol of at
// most MTULen octets); a value that is not an ibv_mtu is returned as is
// with ok false (perftest then keeps its own).
func ParseMTU(b []byte) (mtu int, ok bool, err error) {
	if len(b) != MTULen {
		return 0, false, fmt.Errorf("%w: MTU of %d octets, want %d", ErrPerftestMsg, len(b), MTULen)
	}
	s := string(b)
	if i := bytes.IndexByte(b, 0); i >= 0 {
		s = string(b[:i])
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, false, nil
	}
	return v, v >= 1 && v <= 5, nil
}

// Report is perftest's struct bw_report_data as exchanged by
// xchg_bw_reports after an ib_write_bw or ib_read_bw run: five 8-octet
// messages, in this order. BW values are in MB/sec with MB = 2^20 octets,
// MsgRate in Mpps.
type Report struct {
	Size    uint64
	Iters   uint64
	BWPeak  float64
	BWAvg   float64
	MsgRate float64
}

// Fields returns the five messages of r.
func (r Report) Fields() [5][]byte {
	be := binary.BigEndian
	return [5][]byte{
		be.AppendUint64(nil, r.Size),
		be.AppendUint64(nil, r.Iters),
		be.AppendUint64(nil, math.Float64bits(r.BWPeak)),
		be.AppendUint64(nil, math.Float64bits(r.BWAvg)),
		be.AppendUint64(nil, math.Float64bits(r.MsgRate)),
	}
}

// ParseReportField decodes one report field as its 64-bit image.
func ParseReportField(b []byte) (uint64, error) {
	if len(b) != ReportFieldLen {
		return 0, fmt.Errorf("%w: report field of %d octets, want %d", ErrPerftestMsg, len(b), ReportFieldLen)
	}
	return binary.BigEndian.Uint64(b), nil
}

// ParseReport decodes the five report messages. perftest's server sends
// its never-initialised report (stack garbage): the values are only
// meaningful from the side that ran the traffic.
func ParseReport(f [5][]byte) (Report, error) {
	var v [5]uint64
	for i := range f {
		var err error
		if v[i], err = ParseReportField(f[i]); err != nil {
			return Report{}, fmt.Errorf("report field %d: %w", i, err)
		}
	}
	return Report{Size: v[0], Iters: v[1], BWPeak: math.Float64frombits(v[2]),
		BWAvg: math.Float64frombits(v[3]), MsgRate: math.Float64frombits(v[4])}, nil
}

// AppendCredit appends an iWARP Send credit (host order: little-endian on
// the x86 hosts perftest runs on; perftest does not convert it).
func AppendCredit(b []byte, n uint32) []byte { return binary.LittleEndian.AppendUint32(b, n) }

// ParseCredit decodes an iWARP Send credit.
func ParseCredit(b []byte) (uint32, error) {
	if len(b) != CreditLen {
		return 0, fmt.Errorf("%w: credit of %d octets, want %d", ErrPerftestMsg, len(b), CreditLen)
	}
	return binary.LittleEndian.Uint32(b), nil
}
