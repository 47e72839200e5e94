// Package iwarp is the iWARP wire vocabulary a user or LLP backend author
// needs: the Terminate code space of RFC 5040 §4.8 with the DDP rows of
// RFC 5041 §7.2 and the MPA rows of RFC 5044 §8 / RFC 6581 §8, as one
// table ([Term], [TermCodes]) to match a Terminate's [TermCode] against;
// the RDMAP opcodes (RFC 5040 §4.1, RFC 7306); the RFC 6581 §9 IRD/ORD
// word, RTR options, defaults and limits ([IRDORD], [DefaultIRD],
// [MaxIRD]); and the RFC 5043 §9 MULPDU floor ([SCTPMinMULPDU]). Header
// layouts, codecs and negotiation rules that only the module's engines use
// are in the module's internal/iwarpwire.
package iwarp

// Package iwarp imports nothing of this module: rdmap, ddp, mpa, pmtu,
// sctpllp and the tools above them import it.
