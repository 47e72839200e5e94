package harness

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/netem"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// measureHOL shows head-of-line blocking: cfg.HOLStreams concurrent RDMA
// Reads, one per stream, while the path loses packets of one stream only:
// over SCTP the packets carrying DATA of SCTP stream 1 of one association
// (each stream is placed as it arrives, RFC 5043 §5.2.1, so a loss should
// delay its own stream only); over MPA on as many TCP connections, those
// of the first; over MPA on one connection, HOLLoss/HOLStreams of all (the
// same expected losses; every Read behind a lost segment waits, RFC 5044).
func measureHOL(cfg *WANConfig) ([]HOL, error) {
	n := cfg.HOLStreams
	type run struct {
		HOL
		loss float64
		sel  func() func([]byte) bool
	}
	var runs []run
	for _, llp := range cfg.LLPs {
		if llp == transport.MPA {
			runs = append(runs,
				run{HOL{Name: fmt.Sprintf("mpa, one TCP connection, %d Reads in flight (loses %g%% of all its packets)", n, cfg.HOLLoss*100/float64(n)), LLP: llp, Streams: 1, Depth: n},
					cfg.HOLLoss / float64(n), nil},
				run{HOL{Name: fmt.Sprintf("mpa, %d TCP connections, one Read in flight each (the first loses %g%%)", n, cfg.HOLLoss*100), LLP: llp, Streams: n, Depth: 1},
					cfg.HOLLoss, firstTCPConnection})
			continue
		}
		runs = append(runs, run{HOL{Name: fmt.Sprintf("%s, %d streams of one association, one Read in flight each (stream 1 loses %g%%)", llp, n, cfg.HOLLoss*100), LLP: llp, Streams: n, Depth: 1},
			cfg.HOLLoss, func() func([]byte) bool { return sctpStream(1) }})
	}
	d := cfg.holDuration()
	out := make([]HOL, 0, len(runs))
	for _, r := range runs {
		h := r.HOL
		o := cfg.linkOptions()
		if r.sel != nil {
			o.Backend, o.LossOnly = netem.BackendTUN, r.sel()
		}
		l, err := cfg.newPath(netem.Profile{Delay: cfg.HOLRTT / 2, Loss: r.loss, Rate: cfg.Rate}, o)
		if err != nil {
			return nil, err
		}
		s, err := startWANServer(l, h.LLP)
		if err != nil {
			l.Close()
			return nil, err
		}
		res, err := wanRDMA(l, s, h.LLP, bench.Config{Test: bench.TestRead, Size: cfg.HOLSize, Streams: h.Streams, Depth: h.Depth, Duration: d}, cfg.HOLRTT)
		s.stop()
		ab, ba := l.Counters()
		l.Close()
		h.Err, h.PacketsLost, h.Packets = err, ab.Lost+ba.Lost, ab.Packets+ba.Packets
		if res != nil {
			h.OpsPerSec = res.Forward.MsgRate()
			fwd := res.PerStream[:min(res.Forward.Streams, len(res.PerStream))]
			h.All, h.AllQ = holDist(fwd)
			if len(fwd) > 1 {
				h.Lossy, h.LossyQ = holDist(fwd[:1])
				h.Others, h.OthersQ = holDist(fwd[1:])
			}
		}
		cfg.logf("head of line, RTT %v: %s: lossy stream median %v p99 %v; others median %v p99 %v; all p99 %v; %d of %d packets lost; %.0f Reads/s (%v)",
			cfg.HOLRTT, h.Name, h.Lossy.Median, h.Lossy.P99, h.Others.Median, h.Others.P99, h.All.P99, h.PacketsLost, h.Packets, h.OpsPerSec, err)
		out = append(out, h)
	}
	return out, nil
}

// holDist summarises the latencies of rs and samples their CDF.
func holDist(rs []bench.StreamResult) (bench.Latency, []time.Duration) {
	d, ok := bench.LatencyOf(rs)
	if !ok {
		return bench.Latency{}, nil
	}
	q := make([]time.Duration, len(holQuantiles))
	for i, v := range holQuantiles {
		q[i] = d.Quantile(v)
	}
	return d.Summary(), q
}

// ipv4Payload returns the protocol and payload of an IPv4 packet.
func ipv4Payload(p []byte) (proto byte, payload []byte, ok bool) {
	if len(p) < 20 || p[0]>>4 != 4 {
		return 0, nil, false
	}
	ihl := int(p[0]&0xf) * 4
	if ihl < 20 || len(p) < ihl {
		return 0, nil, false
	}
	return p[9], p[ihl:], true
}

// sctpStream selects the IPv4 packets that carry an SCTP packet, in UDP
// (RFC 6951: the userspace stacks) or directly (IP protocol 132: kernel
// SCTP), with a DATA chunk of stream sid.
func sctpStream(sid uint16) func([]byte) bool {
	return func(p []byte) bool {
		proto, pl, ok := ipv4Payload(p)
		switch {
		case !ok:
			return false
		case proto == 17 && len(pl) >= 8: // SCTP over UDP (RFC 6951)
			pl = pl[8:]
		case proto == 132: // kernel SCTP
		default:
			return false
		}
		pkt, err := wire.ParsePacketNoChecksum(pl)
		if err != nil {
			return false
		}
		it := pkt.Chunks()
		for c, ok := it.Next(); ok; c, ok = it.Next() {
			if c.Type != wire.ChunkData {
				continue
			}
			if d, err := wire.ParseData(c); err == nil && d.StreamID == sid {
				return true
			}
		}
		return false
	}
}

// firstTCPConnection returns a selector of the IPv4 packets of the first
// TCP connection whose SYN it sees (both directions).
func firstTCPConnection() func([]byte) bool {
	var mu sync.Mutex
	var port uint16 // the connecting side's
	return func(p []byte) bool {
		proto, tcp, ok := ipv4Payload(p)
		if !ok || proto != 6 || len(tcp) < 14 {
			return false
		}
		src, dst := binary.BigEndian.Uint16(tcp), binary.BigEndian.Uint16(tcp[2:])
		mu.Lock()
		defer mu.Unlock()
		if port == 0 && tcp[13]&0x12 == 0x02 { // SYN without ACK
			port = src
		}
		return port != 0 && (src == port || dst == port)
	}
}
