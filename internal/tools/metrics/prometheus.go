package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric name.
const Namespace = "sctp_rdma"

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(Namespace+"_"+name, help, labels, nil)
}

var (
	dStreamsActive   = desc("streams_active", "Streams being served.")
	dStreamsFinished = desc("streams_finished_total", "Streams whose service ended.")
	dAdmitted        = desc("streams_admitted_total", "Stream requests admitted.")
	dRefused         = desc("streams_refused_total", "Stream requests or Setups refused, by cap.", "reason")
	dSetupTimeouts   = desc("streams_setup_timeouts_total", "Streams ended because no Setup came within --setup-timeout.")
	dMemReserved     = desc("memory_reserved_bytes", "Buffer memory reserved for the streams being served.")
	dMemMax          = desc("memory_max_bytes", "The buffer memory budget (--max-memory).")
	dMsgSent         = desc("messages_sent_total", "RDMAP messages handed to DDP, by opcode (RFC 5040 §4.3, RFC 7306 §4.1).", "opcode")
	dMsgRecv         = desc("messages_received_total", "RDMAP messages received, by opcode.", "opcode")
	dOctetsSent      = desc("sent_bytes_total", "ULP payload octets of Sends, Writes and Read Responses sent.")
	dOctetsPlaced    = desc("placed_bytes_total", "Octets placed into local buffers by received Writes, Read Responses and Sends.")
	dTerminates      = desc("terminates_total", "Terminate messages by layer/type/code (RFC 5040 §4.8).", "direction", "layer", "type", "code", "name")
	dMPACRC          = desc("mpa_crc_errors_total", "MPA connections ended on an FPDU CRC error (RFC 5044 §8 code 2).")
	dAssocActive     = desc("associations_active", "SCTP associations being served.")
	dAssocFinished   = desc("associations_finished_total", "SCTP associations that ended.")
	dControl         = desc("session_control_total", "DDP Stream Session Control messages by function (RFC 5043 §5.2.3, RFC 6581 §7).", "direction", "function")
	dErroneous       = desc("erroneous_streams_total", "SCTP streams labelled erroneous (RFC 5040 §7).")
	dRetrans         = desc("sctp_retransmitted_chunks_total", "DATA chunks the SCTP stack retransmitted.")

	dIdleClosed    = desc("idle_associations_closed_total", "SCTP associations aborted for having no session for their idle timeout.")
	dGapTimeouts   = desc("resequencing_gap_timeouts_total", "Streams ended because a DDP-SSN stayed missing too long (RFC 5043 §10).")
	dHeldBytes     = desc("resequencing_held_bytes", "Octets held for DDP-SSN re-sequencing now, over all associations.")
	dMPAAdmission  = desc("mpa_connections_total", "What the MPA listener's admission did with TCP connections before their MPA Request (RFC 5044 §7.1.2).", "outcome")
	dMPAStartup    = desc("mpa_startups_in_progress", "TCP connections in their MPA start-up now.")
	dRxMemHeld     = desc("sctp_receive_memory_held_bytes", "Memory the sctp-native associations hold for received data now (reassembly, receive queues), charged by buffer capacity.")
	dRxMemLimit    = desc("sctp_receive_memory_limit_bytes", "The process-wide budget of received data (procstat.SetMemoryLimit).")
	dRxMemPeak     = desc("sctp_receive_memory_peak_bytes", "The most received data held at once.")
	dRxMemRefused  = desc("sctp_receive_memory_refused_total", "Charges refused because the budget or an association's share was full (the DATA dropped, RFC 9260 §6.2, or the association aborted).")
	dRxMemReclaims = desc("sctp_receive_memory_reclaims_total", "Associations aborted with Out of Resource because the budget was full and they held the most of it (RFC 9260 §3.3.10.4).")
	dLnAssocs      = desc("sctp_listener_associations", "Associations the sctp-native listeners hold now.")
	dLnQueueDrops  = desc("sctp_listener_queue_drops_total", "Packets of known associations dropped because their receive queue, or all queues together, were full.")
	dLnEvicted     = desc("sctp_listener_evicted_total", "Associations aborted to make room for a new peer in a full table.")
	dLnStalled     = desc("sctp_listener_stalled_total", "Associations aborted for making no progress for the stall timeout.")
	dLnRebinds     = desc("sctp_listener_rebinds_total", "Changes of a peer's UDP port taken from a packet with the association's tag (RFC 6951 §5.4).")
	dLnUnbound     = desc("sctp_listener_unbound_drops_total", "Packets a multihomed listener's wildcard socket received at a local address it was not given, dropped.")
	dHandshake     = desc("sctp_handshake_packets_total", "What the sctp-pion listener's stateless handshake did with unauthenticated packets (RFC 9260 §5.1.3, §8.4, §8.5).", "outcome")
	dSMsgSent      = desc("stream_messages_sent_total", "A live stream's RDMAP messages sent, by opcode (opcodes with none omitted).", "llp", "peer", "stream", "opcode")
	dSMsgRecv      = desc("stream_messages_received_total", "A live stream's RDMAP messages received, by opcode (opcodes with none omitted).", "llp", "peer", "stream", "opcode")
	dSOctetsSent   = desc("stream_sent_bytes_total", "A live stream's payload octets sent.", "llp", "peer", "stream")
	dSOctetsPlaced = desc("stream_placed_bytes_total", "A live stream's octets placed.", "llp", "peer", "stream")

	dAControl   = desc("association_session_control_total", "A live association's session control messages by function.", "llp", "peer", "direction", "function")
	dAErroneous = desc("association_erroneous_streams_total", "A live association's erroneous streams.", "llp", "peer")
	dASRTT      = desc("association_srtt_seconds", "A live association's smoothed round-trip time as its SCTP stack reports it (RFC 9260 §6.3.1).", "llp", "peer")
	dPState     = desc("path_state", "A multihomed association's destination (RFC 9260 §6.4): 1 for its state, primary 1 for the primary path.", "llp", "peer", "path", "state", "primary")
	dPSRTT      = desc("path_srtt_seconds", "A destination's smoothed round-trip time (RFC 9260 §6.3.1).", "llp", "peer", "path")
	dPRTO       = desc("path_rto_seconds", "A destination's retransmission timeout (RFC 9260 §6.3.1).", "llp", "peer", "path")
	dPCwnd      = desc("path_cwnd_bytes", "A destination's congestion window (RFC 9260 §7.2).", "llp", "peer", "path")
	dPOctets    = desc("path_sent_bytes_total", "Octets of DATA sent to a destination.", "llp", "peer", "path")
	dPErrors    = desc("path_errors", "A destination's error counter (RFC 9260 §8.2).", "llp", "peer", "path")
	dPPLPMTU    = desc("path_plpmtu_bytes", "A destination's PLPMTU, an IP packet size (RFC 8899; RFC 9260 §7.3).", "llp", "peer", "path")
	dARetrans   = desc("association_retransmitted_chunks_total", "A live association's retransmitted DATA chunks.", "llp", "peer")
)

// Collector is a prometheus.Collector that takes a Snapshot at each
// scrape.
type Collector struct{ src Source }

// NewCollector returns a Collector of src.
func NewCollector(src Source) *Collector { return &Collector{src: src} }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dStreamsActive, dStreamsFinished, dAdmitted, dRefused, dSetupTimeouts,
		dMemReserved, dMemMax, dMsgSent, dMsgRecv, dOctetsSent, dOctetsPlaced, dTerminates, dMPACRC,
		dAssocActive, dAssocFinished, dControl, dErroneous, dRetrans, dIdleClosed, dGapTimeouts, dHeldBytes, dRxMemHeld, dRxMemLimit, dRxMemPeak, dRxMemRefused, dRxMemReclaims,
		dLnAssocs, dLnQueueDrops, dLnEvicted, dLnStalled, dLnRebinds, dLnUnbound, dHandshake, dMPAAdmission, dMPAStartup, dSMsgSent, dSMsgRecv, dSOctetsSent,
		dSOctetsPlaced, dAControl, dAErroneous, dASRTT, dARetrans, dPState, dPSRTT, dPRTO, dPCwnd, dPOctets, dPErrors, dPPLPMTU} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := Take(c.src)
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(dStreamsActive, float64(s.StreamsActive))
	counter(dStreamsFinished, s.StreamsFinished)
	counter(dAdmitted, s.Admitted)
	counter(dRefused, s.RefusedBusy, "busy")
	counter(dRefused, s.RefusedNotBench, "not_bench")
	counter(dRefused, s.RefusedMemory, "memory")
	counter(dRefused, s.RefusedShare, "client_share")
	counter(dSetupTimeouts, s.SetupTimeouts)
	gauge(dMemReserved, float64(s.MemoryReserved))
	gauge(dMemMax, float64(s.MemoryMax))
	for _, name := range opcodeNames {
		counter(dMsgSent, s.RDMAP.Sent[name], name)
		counter(dMsgRecv, s.RDMAP.Received[name], name)
	}
	counter(dOctetsSent, s.RDMAP.OctetsSent)
	counter(dOctetsPlaced, s.RDMAP.OctetsPlaced)
	for _, t := range s.Terminates {
		l, ty, co := strconv.Itoa(int(t.Layer)), strconv.Itoa(int(t.Type)), fmt.Sprintf("0x%02x", t.Code)
		counter(dTerminates, t.Sent, "sent", l, ty, co, t.Name)
		counter(dTerminates, t.Received, "received", l, ty, co, t.Name)
	}
	counter(dMPACRC, s.MPACRCErrors)
	m := s.MPA
	for _, o := range []struct {
		name string
		v    uint64
	}{{"admitted", m.Admitted}, {"refused_max_startups", m.RefusedStartups}, {"refused_per_address", m.RefusedPerAddress},
		{"refused_fd_limit", m.RefusedFDs}, {"startup_timeout", m.StartupTimeouts}, {"startup_failed", m.StartupFailures}} {
		counter(dMPAAdmission, o.v, o.name)
	}
	gauge(dMPAStartup, float64(m.InStartup))
	gauge(dAssocActive, float64(s.AssociationsActive))
	counter(dAssocFinished, s.AssociationsFinished)
	for _, name := range functionNames {
		if name != "" {
			counter(dControl, s.SessionControl.Sent[name], "sent", name)
			counter(dControl, s.SessionControl.Received[name], "received", name)
		}
	}
	counter(dErroneous, s.ErroneousStreams)
	counter(dRetrans, s.Retransmissions)
	counter(dIdleClosed, s.IdleClosed)
	counter(dGapTimeouts, s.GapTimeouts)
	gauge(dHeldBytes, float64(s.HeldBytes))
	rm := s.ReceiveMemory
	gauge(dRxMemHeld, float64(rm.Used))
	gauge(dRxMemLimit, float64(rm.Limit))
	gauge(dRxMemPeak, float64(rm.Peak))
	counter(dRxMemRefused, rm.Refused)
	counter(dRxMemReclaims, rm.Reclaims)
	ls := s.Listeners
	gauge(dLnAssocs, float64(ls.Associations))
	counter(dLnQueueDrops, ls.QueueDrops)
	counter(dLnEvicted, ls.Evicted)
	counter(dLnStalled, ls.Stalled)
	counter(dLnRebinds, ls.Rebinds)
	counter(dLnUnbound, ls.Unbound)
	h := s.Handshake
	for _, o := range []struct {
		name string
		v    uint64
	}{{"init_ack_sent", h.InitAcks}, {"rate_limited", h.RateLimited}, {"bad_packet", h.BadPackets},
		{"bad_init", h.BadInits}, {"refused_no_ddp_indication", h.RefusedALI}, {"cookie_ok", h.CookiesOK},
		{"cookie_bad", h.CookiesBad}, {"backlog_full", h.BacklogFull}, {"foreign_tag", h.ForeignTag},
		{"out_of_the_blue", h.OutOfTheBlue}, {"refused_association_cap", h.RefusedFull}} {
		counter(dHandshake, o.v, o.name)
	}
	for _, ps := range s.PerStream {
		sid := strconv.Itoa(int(ps.Stream))
		for _, name := range opcodeNames {
			if v := ps.Sent[name]; v > 0 {
				counter(dSMsgSent, v, ps.LLP, ps.Peer, sid, name)
			}
			if v := ps.Received[name]; v > 0 {
				counter(dSMsgRecv, v, ps.LLP, ps.Peer, sid, name)
			}
		}
		counter(dSOctetsSent, ps.OctetsSent, ps.LLP, ps.Peer, sid)
		counter(dSOctetsPlaced, ps.OctetsPlaced, ps.LLP, ps.Peer, sid)
	}
	for _, a := range s.PerAssociation {
		for _, name := range functionNames {
			if name != "" {
				counter(dAControl, a.SessionControl.Sent[name], a.LLP, a.Peer, "sent", name)
				counter(dAControl, a.SessionControl.Received[name], a.LLP, a.Peer, "received", name)
			}
		}
		counter(dAErroneous, a.ErroneousStreams, a.LLP, a.Peer)
		if a.SRTTSeconds != nil {
			gauge(dASRTT, *a.SRTTSeconds, a.LLP, a.Peer)
		}
		if a.Retransmissions != nil {
			counter(dARetrans, *a.Retransmissions, a.LLP, a.Peer)
		}
		for _, p := range a.Paths {
			gauge(dPState, 1, a.LLP, a.Peer, p.Addr, p.State, strconv.FormatBool(p.Primary))
			gauge(dPSRTT, p.SRTTSeconds, a.LLP, a.Peer, p.Addr)
			gauge(dPRTO, p.RTOSeconds, a.LLP, a.Peer, p.Addr)
			gauge(dPCwnd, float64(p.CwndBytes), a.LLP, a.Peer, p.Addr)
			counter(dPOctets, p.OctetsSent, a.LLP, a.Peer, p.Addr)
			gauge(dPErrors, float64(p.Errors), a.LLP, a.Peer, p.Addr)
			gauge(dPPLPMTU, float64(p.PLPMTU), a.LLP, a.Peer, p.Addr)
		}
	}
}

// Handler returns the /metrics handler: the Collector of src plus the Go
// runtime and process collectors, in the Prometheus text format.
func Handler(src Source) http.Handler {
	reg := newRegistry(NewCollector(src))
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

func newRegistry(c *Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return reg
}

// Listen starts an HTTP server on addr answering /metrics until ctx ends.
// It returns the bound address and a function that waits for the server
// to stop.
func Listen(ctx context.Context, addr string, src Source) (net.Addr, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler(src))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 8 << 10}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return
		}
	}()
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	wait := func() {
		if stop() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = srv.Shutdown(sctx)
			cancel()
		}
		<-done
	}
	return ln.Addr(), wait, nil
}
