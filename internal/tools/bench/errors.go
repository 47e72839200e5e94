package bench

import (
	"errors"
	"fmt"
)

// errMalformed is wrapped by every *messageError: a control message of the
// bench exchange (docs/cli.md) that is truncated or carries invalid values.
var errMalformed = errors.New("bench: malformed control message")

// messageError describes a malformed control message.
type messageError struct {
	// Message names the message ("setup", "advert", "report").
	Message string
	// Reason says which rule was broken.
	Reason string
}

// Error implements error.
func (e *messageError) Error() string {
	return fmt.Sprintf("bench: malformed %s message: %s", e.Message, e.Reason)
}

// Unwrap returns errMalformed.
func (e *messageError) Unwrap() error { return errMalformed }

func malformed(msg, format string, args ...any) error {
	return &messageError{Message: msg, Reason: fmt.Sprintf(format, args...)}
}

// Test names one benchmark operation.
type Test uint8

// The tests of the bench exchange.
const (
	TestWrite    Test = 1 // RDMA Write (RFC 5040 §5.1)
	TestRead     Test = 2 // RDMA Read (RFC 5040 §5.2)
	TestSend     Test = 3 // Send (RFC 5040 §5.3)
	TestFetchAdd Test = 4 // Atomic FetchAdd (RFC 7306 §5.1.1)
	TestCmpSwap  Test = 5 // Atomic CmpSwap (RFC 7306 §5.1.2)
	TestWriteImm Test = 6 // Write with Immediate Data (RFC 7306 §6)
	TestPing     Test = 7 // rping-style Read, Write-back and verification
)

var testNames = map[Test]string{
	TestWrite: "write", TestRead: "read", TestSend: "send", TestFetchAdd: "fetchadd",
	TestCmpSwap: "cmpswap", TestWriteImm: "write-imm", TestPing: "ping",
}

// Tests lists the benchmark tests (ping excluded) in display order.
var Tests = []Test{TestWrite, TestRead, TestSend, TestFetchAdd, TestCmpSwap, TestWriteImm}

// String returns the test's command line name.
func (t Test) String() string {
	if n, ok := testNames[t]; ok {
		return n
	}
	return fmt.Sprintf("test(%d)", uint8(t))
}

// valid reports whether t is a defined test.
func (t Test) valid() bool { _, ok := testNames[t]; return ok }

// Atomic reports whether t is an RFC 7306 atomic test (8-octet operands).
func (t Test) Atomic() bool { return t == TestFetchAdd || t == TestCmpSwap }

// RTTFactor is what a latency test's round trips are divided by in the
// table, perftest's rtt_factor (print_report_lat): 2 for Send, Write and
// Write with Immediate, whose ib_*_lat ping-pongs report half the round
// trip; 1 for Read and the atomics (ib_read_lat, ib_atomic_lat), whose
// figure is the whole round trip of a request and its response, and for
// ping.
func (t Test) RTTFactor() int {
	switch t {
	case TestSend, TestWrite, TestWriteImm:
		return 2
	}
	return 1
}

// ParseTest maps a command line name to a Test.
func ParseTest(s string) (Test, error) {
	for t, n := range testNames {
		if n == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown test %q (want write, read, send, fetchadd, cmpswap, write-imm)", s)
}
