// Package seq compares TSNs and stream sequence numbers in the serial
// number arithmetic of RFC 1982 (RFC 9260 §1.6).
package seq
