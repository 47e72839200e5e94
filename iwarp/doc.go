// Package iwarp holds every iWARP wire definition that more than one layer
// needs, once, the way Linux siw keeps them in one header (iwarp.h): the
// Terminate code space of RFC 5040 §4.8 with the DDP rows of RFC 5041 §7.2
// and the MPA rows of RFC 5044 §8 / RFC 6581 §8 as one table
// ([TermCodes]); the DDP header layouts (RFC 5041 §4); the RDMAP opcodes,
// queue numbers and Control Field (RFC 5040 §4.1) and the Terminate Control
// field (RFC 5040 §4.8); MPA's framing sizes (RFC 5044 §3, §4);
// the RFC 5043 §9 MULPDU floor; the RFC 6581 §9 IRD/ORD word, RTR options,
// defaults and limits ([IRDORD], [DefaultIRD], [MaxIRD]) and the §9.1
// negotiation rules ([NegotiateResponder], [NegotiateInitiator]).
package iwarp

// Package iwarp imports nothing of this module: rdmap, ddp, mpa, pmtu,
// sctpllp and the tools above them import it. What only one layer parses
// (RDMAP Read Requests, MPA frames, SCTP chunks) stays in that layer.
