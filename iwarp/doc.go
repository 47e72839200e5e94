// Package iwarp holds every iWARP wire definition that more than one layer
// needs, once, the way Linux siw keeps them in one header (iwarp.h):
//
//   - the RDMAP Terminate Layer / Error Type / Error Code space of
//     RFC 5040 §4.8 (Figure 9), with the DDP rows of RFC 5041 §7.2 and the
//     MPA rows of RFC 5044 §8 and RFC 6581 §8 ([TermCode] and its tables);
//   - the enhanced RDMA connection establishment word of RFC 6581 §9 (IRD,
//     ORD, connection model and RTR options: [IRDORD], [RTR]), which MPA
//     carries in its Request/Reply frames and the RFC 5043 adaptation in
//     its session control private data;
//   - the IRD/ORD negotiation rules of RFC 6581 §9.1 ([NegotiateResponder],
//     [NegotiateInitiator]), so every LLP turns the exchanged words into an
//     endpoint's queue depths the same way.
//
// Package iwarp imports nothing of this module: rdmap, ddp, mpa, sctpllp
// and the tools above them import it. Layout details that only one layer
// parses (DDP headers, RDMAP headers, MPA frames, SCTP chunks) stay in that
// layer's package, one file per message.
package iwarp
