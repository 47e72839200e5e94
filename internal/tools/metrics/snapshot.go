// Package metrics turns a bench server's and its listener's counters into
// one Snapshot, printed by `serve` at exit (text and JSON), and exposes the
// same figures in the Prometheus text format for `serve --metrics ADDR`.
//
// Nothing here runs on the data path: the protocol layers keep their
// counters with atomic additions (rdmap.Endpoint.Stats,
// sctpllp.Association.Stats); a Snapshot reads them when it is taken, at
// a scrape or at exit.
package metrics

import (
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/procstat"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// Source is what a Snapshot is taken of: the listener and, if Server is
// not nil, what the server on it counted. metrics knows no server type:
// serve hands it a func that reads its bench server.
type Source struct {
	Server   func() Served
	Listener *transport.Listener
}

// Served is what a server counted at one instant: what its caps did, the
// sum over the streams it served and each live stream.
type Served struct {
	// Active streams hold Reserved octets of buffers, out of MaxMemory.
	Active              int
	Reserved, MaxMemory int64
	// The stream requests admitted and refused by each cap, and the
	// streams ended for want of a Setup.
	Admitted, RefusedBusy, RefusedNotBench, RefusedMemory, RefusedShare, SetupTimeouts uint64
	// Finished counts the streams whose service ended; Totals sums the
	// RDMAP counters of every stream, finished and live.
	Finished uint64
	Totals   rdmap.Stats
	// Terminates lists each Terminate code seen, ordered by layer, type
	// and code.
	Terminates []ServedTerminate
	Streams    []ServedStream
}

// ServedTerminate counts the Terminates of one layer/type/code (RFC 5040
// §4.8) a server's streams sent and received.
type ServedTerminate struct {
	Code           iwarp.TermCode
	Sent, Received uint64
}

// ServedStream is one live stream of a server: its LLP, the client's
// transport address, its SCTP stream (0 over MPA), the test its Setup
// asked for (empty before it) and its RDMAP counters.
type ServedStream struct {
	LLP, Peer string
	StreamID  uint16
	Test      string
	Stats     rdmap.Stats
}

// opcodeNames are the label values of the RDMAP opcodes (RFC 5040 §4.3,
// RFC 7306 §4.1), in opcode order.
var opcodeNames = [...]string{
	iwarp.RDMAPOpWrite:            "write",
	iwarp.RDMAPOpReadRequest:      "read_request",
	iwarp.RDMAPOpReadResponse:     "read_response",
	iwarp.RDMAPOpSend:             "send",
	iwarp.RDMAPOpSendInvalidate:   "send_invalidate",
	iwarp.RDMAPOpSendSE:           "send_se",
	iwarp.RDMAPOpSendSEInvalidate: "send_se_invalidate",
	iwarp.RDMAPOpTerminate:        "terminate",
	iwarp.RDMAPOpImmediate:        "immediate",
	iwarp.RDMAPOpImmediateSE:      "immediate_se",
	iwarp.RDMAPOpAtomicRequest:    "atomic_request",
	iwarp.RDMAPOpAtomicResponse:   "atomic_response",
}

// functionNames are the label values of the session control function
// codes (RFC 5043 §5.2.3, RFC 6581 §7), in code order.
var functionNames = [...]string{"initiate", "accept", "reject", "terminate",
	"enhanced_initiate", "enhanced_accept", "enhanced_reject"}

// ByName is a set of counters keyed by a label value.
type ByName map[string]uint64

func opcodes(v [iwarpwire.RDMAPNumOpcodes]uint64) ByName {
	m := make(ByName, len(opcodeNames))
	for op, name := range opcodeNames {
		m[name] = v[op]
	}
	return m
}

func functions(c sctpllp.ControlCounts) ByName {
	v := [len(functionNames)]uint64{c.Initiate, c.Accept, c.Reject, c.Terminate,
		c.EnhancedInitiate, c.EnhancedAccept, c.EnhancedReject}
	m := make(ByName, len(functionNames))
	for i, name := range functionNames {
		m[name] = v[i]
	}
	return m
}

// RDMAP are RDMAP message counters.
type RDMAP struct {
	Sent         ByName `json:"messages_sent"`
	Received     ByName `json:"messages_received"`
	OctetsSent   uint64 `json:"octets_sent"`
	OctetsPlaced uint64 `json:"octets_placed"`
}

func rdmapOf(s rdmap.Stats) RDMAP {
	return RDMAP{Sent: opcodes(s.Sent), Received: opcodes(s.Received), OctetsSent: s.OctetsSent, OctetsPlaced: s.OctetsPlaced}
}

// Terminate counts the Terminates of one layer/type/code (RFC 5040 §4.8).
type Terminate struct {
	Layer    uint8  `json:"layer"`
	Type     uint8  `json:"type"`
	Code     uint8  `json:"code"`
	Name     string `json:"name"`
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
}

// Control are session control counters by function code.
type Control struct {
	Sent     ByName `json:"sent"`
	Received ByName `json:"received"`
}

// Stream is one live stream.
type Stream struct {
	LLP    string `json:"llp"`
	Peer   string `json:"peer"`
	Stream uint16 `json:"stream"`
	Test   string `json:"test,omitempty"`
	RDMAP
}

// Association is one live SCTP association.
type Association struct {
	LLP              string   `json:"llp"`
	Peer             string   `json:"peer"`
	SessionControl   Control  `json:"session_control"`
	ErroneousStreams uint64   `json:"erroneous_streams"`
	SRTTSeconds      *float64 `json:"srtt_seconds,omitempty"`
	Retransmissions  *uint64  `json:"retransmitted_chunks,omitempty"`
	// Paths are a multihomed association's destinations (RFC 9260 §6.4).
	Paths []Path `json:"paths,omitempty"`
}

// Path is one destination address of a multihomed association.
type Path struct {
	Addr        string  `json:"addr"`
	State       string  `json:"state"`
	Primary     bool    `json:"primary"`
	SRTTSeconds float64 `json:"srtt_seconds"`
	RTOSeconds  float64 `json:"rto_seconds"`
	CwndBytes   int     `json:"cwnd_bytes"`
	OctetsSent  uint64  `json:"octets_sent"`
	Errors      int     `json:"errors"`
	PLPMTU      int     `json:"plpmtu_bytes"`
}

// Snapshot is every counter of a serving process at one instant.
type Snapshot struct {
	LLP string `json:"llp"`
	// Streams: what the server's caps did and how many streams it served.
	StreamsActive   int    `json:"streams_active"`
	StreamsFinished uint64 `json:"streams_finished"`
	Admitted        uint64 `json:"streams_admitted"`
	RefusedBusy     uint64 `json:"refused_busy"`
	RefusedNotBench uint64 `json:"refused_not_bench"`
	RefusedMemory   uint64 `json:"refused_memory"`
	RefusedShare    uint64 `json:"refused_client_share"`
	SetupTimeouts   uint64 `json:"setup_timeouts"`
	MemoryReserved  int64  `json:"memory_reserved"`
	MemoryMax       int64  `json:"memory_max"`
	// RDMAP sums every stream served, finished and live.
	RDMAP      RDMAP       `json:"rdmap"`
	Terminates []Terminate `json:"terminates"`
	// MPACRCErrors counts the MPA connections that ended on a CRC error
	// (the Terminate sent: LLP layer, MPA error, code 2; RFC 5044 §8).
	MPACRCErrors uint64 `json:"mpa_crc_errors"`
	// SCTP: session control, erroneous streams and the stack's
	// retransmissions, summed over every association; zero over MPA.
	AssociationsActive   uint64  `json:"associations_active"`
	AssociationsFinished uint64  `json:"associations_finished"`
	SessionControl       Control `json:"session_control"`
	ErroneousStreams     uint64  `json:"erroneous_streams"`
	Retransmissions      uint64  `json:"sctp_retransmitted_chunks"`
	// IdleClosed counts associations aborted for having no session
	// (sctpllp.Config.IdleTimeout); GapTimeouts streams ended for a
	// DDP-SSN missing too long; HeldBytes the octets held for
	// re-sequencing now.
	IdleClosed  uint64 `json:"idle_associations_closed"`
	GapTimeouts uint64 `json:"gap_timeouts"`
	HeldBytes   int64  `json:"resequencing_held_bytes"`
	// ReceiveMemory is the process-wide budget of received data the
	// sctp-native associations hold (reassembly, receive queues), with
	// the charges it refused.
	ReceiveMemory procstat.MemoryStats `json:"sctp_receive_memory"`
	// Listeners sums the sctp-native listeners' counters of their
	// associations: held now, evicted, reaped, queue drops, rebindings.
	Listeners procstat.ListenerStats `json:"sctp_listeners"`
	// Handshake counts the sctp-pion listener's stateless handshake and
	// the unauthenticated packets it dropped or answered.
	Handshake sctp.HandshakeStats `json:"handshake"`
	// MPA counts the MPA listener's admission of TCP connections before
	// their MPA Request (zero over SCTP).
	MPA transport.MPAStats `json:"mpa_admission"`
	// PerStream and PerAssociation list the live ones.
	PerStream      []Stream      `json:"per_stream"`
	PerAssociation []Association `json:"per_association"`
}

// Take reads every counter of src.
func Take(src Source) Snapshot {
	var s Snapshot
	s.ReceiveMemory = procstat.Memory()
	s.Listeners = procstat.ListenerTotals()
	if l := src.Listener; l != nil {
		ls := l.Stats()
		s.LLP = ls.LLP
		at := ls.Totals
		s.AssociationsActive, s.AssociationsFinished = ls.Live, ls.Finished
		s.SessionControl = Control{Sent: functions(at.ControlSent), Received: functions(at.ControlReceived)}
		s.ErroneousStreams = at.ErroneousStreams
		s.Retransmissions = at.Transport.Retransmissions
		s.IdleClosed, s.GapTimeouts, s.HeldBytes = at.IdleClosed, at.GapTimeouts, at.HeldBytes
		s.Handshake = ls.Handshake
		s.MPA = ls.MPA
		s.PerAssociation = []Association{}
		for _, a := range ls.Associations {
			pa := Association{LLP: a.LLP, Peer: a.Peer, ErroneousStreams: a.ErroneousStreams,
				SessionControl: Control{Sent: functions(a.ControlSent), Received: functions(a.ControlReceived)}}
			if a.Transport.HasSRTT {
				v := a.Transport.SRTT.Seconds()
				pa.SRTTSeconds = &v
			}
			if a.Transport.HasRetransmissions {
				v := a.Transport.Retransmissions
				pa.Retransmissions = &v
			}
			for _, p := range a.Transport.Paths {
				pa.Paths = append(pa.Paths, Path{Addr: p.Addr.String(), State: p.State, Primary: p.Primary,
					SRTTSeconds: p.SRTT.Seconds(), RTOSeconds: p.RTO.Seconds(), CwndBytes: p.Cwnd, OctetsSent: p.OctetsSent, Errors: p.Errors, PLPMTU: p.PLPMTU})
			}
			s.PerAssociation = append(s.PerAssociation, pa)
		}
	}
	if src.Server != nil {
		st := src.Server()
		s.StreamsActive, s.Admitted, s.RefusedBusy = st.Active, st.Admitted, st.RefusedBusy
		s.RefusedNotBench, s.RefusedMemory, s.SetupTimeouts = st.RefusedNotBench, st.RefusedMemory, st.SetupTimeouts
		s.RefusedShare = st.RefusedShare
		s.MemoryReserved, s.MemoryMax = st.Reserved, st.MaxMemory
		s.StreamsFinished = st.Finished
		s.RDMAP = rdmapOf(st.Totals)
		s.Terminates = []Terminate{}
		crc := iwarp.Term.MPACRC
		for _, tc := range st.Terminates {
			s.Terminates = append(s.Terminates, Terminate{Layer: tc.Code.Layer, Type: tc.Code.EType, Code: tc.Code.Code,
				Name: tc.Code.String(), Sent: tc.Sent, Received: tc.Received})
			if tc.Code == crc && s.LLP == transport.MPA {
				s.MPACRCErrors += tc.Sent
			}
		}
		s.PerStream = []Stream{}
		for _, ps := range st.Streams {
			s.PerStream = append(s.PerStream, Stream{LLP: ps.LLP, Peer: ps.Peer, Stream: ps.StreamID, Test: ps.Test, RDMAP: rdmapOf(ps.Stats)})
		}
	}
	return s
}
