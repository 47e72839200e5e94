package seq

// Serial-number arithmetic for TSNs and stream sequence numbers.
//
// RFC 9260 §1.6 says that TSNs (32 bits) and Stream Sequence Numbers
// (16 bits) are compared with the serial number arithmetic of RFC 1982
// (SERIAL_BITS = 32 and 16). In that arithmetic s1 < s2 when
//
//	(s1 < s2 and s2-s1 < 2^(SERIAL_BITS-1)) or
//	(s1 > s2 and s1-s2 > 2^(SERIAL_BITS-1))
//
// and the comparison of two numbers exactly 2^(SERIAL_BITS-1) apart is
// undefined (RFC 1982 §3.2): for such a pair every function here except
// equality answers false, in both directions, so a caller never mistakes
// a number half the space away for a newer or an older one. The
// implementation is the signed difference: s1 < s2 exactly when
// int32(s2-s1) > 0 (int16 for SSNs).

// TSNLess reports whether a precedes b in 32-bit serial arithmetic
// (RFC 9260 §1.6, RFC 1982 §3.2).
func TSNLess(a, b uint32) bool { return int32(b-a) > 0 }

// TSNLessEq reports whether a equals b or precedes it (RFC 9260 §1.6).
func TSNLessEq(a, b uint32) bool { return a == b || int32(b-a) > 0 }

// TSNGreater reports whether a follows b in 32-bit serial arithmetic
// (RFC 9260 §1.6).
func TSNGreater(a, b uint32) bool { return int32(a-b) > 0 }

// TSNGreaterEq reports whether a equals b or follows it (RFC 9260 §1.6).
func TSNGreaterEq(a, b uint32) bool { return a == b || int32(a-b) > 0 }

// TSNMax returns the later of a and b in serial arithmetic; for a pair
// whose order is undefined (2^31 apart) it returns a.
func TSNMax(a, b uint32) uint32 {
	if TSNGreater(b, a) {
		return b
	}
	return a
}

// SSNLess reports whether a precedes b in 16-bit serial arithmetic
// (RFC 9260 §1.6 for Stream Sequence Numbers, RFC 1982 §3.2).
func SSNLess(a, b uint16) bool { return int16(b-a) > 0 }

// SSNLessEq reports whether a equals b or precedes it (RFC 9260 §1.6).
func SSNLessEq(a, b uint16) bool { return a == b || int16(b-a) > 0 }

// SSNGreater reports whether a follows b in 16-bit serial arithmetic
// (RFC 9260 §1.6).
func SSNGreater(a, b uint16) bool { return int16(a-b) > 0 }

// SSNGreaterEq reports whether a equals b or follows it (RFC 9260 §1.6).
func SSNGreaterEq(a, b uint16) bool { return a == b || int16(a-b) > 0 }
