package iwarp

// SCTPMinMULPDU is the smallest MULPDU an RFC 5043 adaptation may report: a
// session control message with 512 octets of private data (RFC 5043 §9).
const SCTPMinMULPDU = 516
