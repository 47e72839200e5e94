// Package wireshark checks this module's MPA/TCP traffic against an
// independent decoder: Wireshark's iWARP dissectors (tshark, Debian's
// package). Its test captures real connections on the loopback interface
// — every RDMAP operation, in each MPA mode (revision 1 and 2, CRC on and
// off, Markers, peer-to-peer RTR), ending with a Terminate — and requires
// that tshark decodes every FPDU as MPA/DDP/RDMAP, reports no malformed
// packet and finds every CRC good (RFC 5044 §4.4).
//
// The package has no non-test code beyond this documentation.
package wireshark
