// Package ddp implements the Direct Data Placement protocol, RFC 5041: a
// Sender that segments tagged and untagged messages to the LLP's MULPDU and a
// Receiver that validates, places and delivers them in order, for the ULP
// above (rdmap) through the ULP interface.
package ddp

// The package has two parts; the wire formats it parses and builds (the
// DDP Control Field, tagged and untagged headers and segment dispatch,
// RFC 5041 §4) and its error type with the RFC 5041 §7.2 type and code are
// the module's internal/iwarpwire:
//
//   - The Sender (tx.go), which cuts ULP messages into DDP segments no larger
//     than the LLP's current MULPDU (§5.2), numbers untagged messages per
//     queue (§4.3) and hands header and payload separately to the LLP.
//   - The Receiver (rx.go, queue.go), an llp.Handler that validates every
//     segment (§7.1), places tagged payload into memory named by the ULP and
//     untagged payload into posted buffers (§5.1), and delivers complete
//     messages to the ULP in order (§5.3, §5.4). Errors carry the RFC 5041
//     §7.2 type and code and the header copy RFC 5040 §4.8 needs
//     for a Terminate message ([RecvError]). A ULP that takes a lock of its
//     own for every message can have that lock guard the Receiver too
//     ([NewReceiverGuarded]): a received message then costs one lock.
//
// The ULP above (the RDMAP engine) is reached only through the [ULP]
// interface of contract.go; the LLP below only through llp.Stream and
// llp.Handler.
