// Package wireshark checks this module's traffic against Wireshark's
// decoder (tshark, Debian's package, installed by scripts/tshark-setup.sh).
//
// MPA/TCP: the tests capture real connections on the loopback interface —
// every RDMAP operation, in each MPA mode (revision 1 and 2, CRC on and
// off, Markers, peer-to-peer RTR), ending with a Terminate — and require
// that tshark's built-in iWARP dissectors decode every FPDU as
// MPA/DDP/RDMAP, report no malformed packet and find every CRC good
// (RFC 5044 §4.4).
package wireshark

// SCTP: Wireshark has no RFC 5043 dissector, so the repository ships one,
// the Lua plugin wireshark/iwarp-sctp.lua (docs/wireshark.md). The tests
// capture a userspace SCTP association (pion, over UDP) carrying every
// RDMAP opcode of RFC 5040 and RFC 7306, RDMA Reads in both directions,
// two Terminates and every session control code of RFC 5043 and RFC 6581,
// decode it with tshark and the plugin, and require that every PPID 16/17
// chunk is decoded with no Lua error, malformed packet or expert warning,
// and that each chunk holds what the endpoints sent (DDP-SSN, STag, TO,
// QN, MSN, MO, opcode, private data, IRD/ORD). Crafted and random chunks
// check that malformed input yields an expert info, never a Lua error.
//
// The package has no non-test code beyond this documentation.
