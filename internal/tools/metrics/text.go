package metrics

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints s as a few lines, each starting with prefix: the
// streams and their caps, the RDMAP messages and octets (what the passive
// side of a one-sided test saw), Terminates, and for SCTP the
// associations' session control and retransmissions.
func WriteText(w io.Writer, prefix string, s Snapshot) {
	fmt.Fprintf(w, "%sstreams: %d served, %d admitted, %d refused busy (--max-streams), %d refused for the client's share (--stream-reserve), %d refused not bench, %d refused for memory (--max-memory), %d ended without Setup (--setup-timeout)\n",
		prefix, s.StreamsFinished+uint64(s.StreamsActive), s.Admitted, s.RefusedBusy, s.RefusedShare, s.RefusedNotBench, s.RefusedMemory, s.SetupTimeouts)
	fmt.Fprintf(w, "%sRDMAP: %d octets placed by the clients' Writes and Sends and in Read Responses received, %d octets sent in Sends and Read Responses\n",
		prefix, s.RDMAP.OctetsPlaced, s.RDMAP.OctetsSent)
	fmt.Fprintf(w, "%sRDMAP messages received: %s; sent: %s\n", prefix, nonZero(s.RDMAP.Received, opcodeNames[:]), nonZero(s.RDMAP.Sent, opcodeNames[:]))
	if len(s.Terminates) > 0 {
		var b strings.Builder
		for i, t := range s.Terminates {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s: %d sent, %d received", t.Name, t.Sent, t.Received)
		}
		fmt.Fprintf(w, "%sTerminates: %s\n", prefix, b.String())
	}
	if s.LLP == "mpa" {
		m := s.MPA
		fmt.Fprintf(w, "%sMPA: %d connections admitted to start-up; refused: %d at the start-up cap, %d at the per-address cap, %d near the fd limit; %d start-ups timed out, %d failed; %d ended on a CRC error\n",
			prefix, m.Admitted, m.RefusedStartups, m.RefusedPerAddress, m.RefusedFDs, m.StartupTimeouts, m.StartupFailures, s.MPACRCErrors)
		return
	}
	h := s.Handshake
	fmt.Fprintf(w, "%sSCTP handshake: %d INIT ACKs sent statelessly, %d cookies accepted, %d refused; %d rate-limited; dropped: %d bad packets, %d bad INITs, %d without the DDP indication, %d foreign-tag packets, %d out of the blue\n",
		prefix, h.InitAcks, h.CookiesOK, h.CookiesBad, h.RateLimited, h.BadPackets, h.BadInits, h.RefusedALI, h.ForeignTag, h.OutOfTheBlue)
	fmt.Fprintf(w, "%sSCTP: %d associations (%d live, %d closed for having no session); session control received: %s; sent: %s; %d erroneous streams; %d DATA chunks retransmitted; %d streams ended on a DDP-SSN gap\n",
		prefix, s.AssociationsActive+s.AssociationsFinished, s.AssociationsActive, s.IdleClosed,
		nonZero(s.SessionControl.Received, functionNames[:]), nonZero(s.SessionControl.Sent, functionNames[:]),
		s.ErroneousStreams, s.Retransmissions, s.GapTimeouts)
	rm := s.ReceiveMemory
	fmt.Fprintf(w, "%sSCTP receive memory: %d of %d octets held, peak %d; %d charges refused, %d associations aborted to reclaim it\n", prefix, rm.Used, rm.Limit, rm.Peak, rm.Refused, rm.Reclaims)
	ls := s.Listeners
	fmt.Fprintf(w, "%sSCTP listeners: %d associations held; %d evicted for a new peer, %d aborted for making no progress; %d packets dropped at a full queue; %d NAT rebindings; %d packets to an address not given dropped\n",
		prefix, ls.Associations, ls.Evicted, ls.Stalled, ls.QueueDrops, ls.Rebinds, ls.Unbound)
}

// nonZero lists the counters of m that are not zero, in the order of
// names.
func nonZero(m ByName, names []string) string {
	var b strings.Builder
	for _, n := range names {
		if n == "" || m[n] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", m[n], n)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
