package bench

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRootCause: the innermost error each layer only prefixed, with the
// detail a wrapping adds after its sentinel kept.
func TestRootCause(t *testing.T) {
	sentinel := errors.New("sctp: association aborted")
	inner := fmt.Errorf("%w (peer): User-Initiated Abort", sentinel)
	flushed := errors.New("rdmap: work request flushed")
	err := fmt.Errorf("%w: %w", flushed, fmt.Errorf("rdmap: LLP stream failed: %w", inner))
	assert.Equal(t, "sctp: association aborted (peer): User-Initiated Abort", rootCause(err))
	assert.Equal(t, "plain", rootCause(errors.New("plain")))
}

// TestRunResultsGroupStreams: the streams of one client test are reported
// once, together, when the last ends; another client's are apart.
func TestRunResultsGroupStreams(t *testing.T) {
	var got []RunResult
	s := NewServer(ServerConfig{Results: func(r RunResult) { got = append(got, r) }})
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	st := setupMsg{Test: TestWrite, Size: 4096}
	k1, _ := s.joinRun(a, st)
	k2, _ := s.joinRun(a, setupMsg{Test: TestWrite, Size: 4096, Flags: flagReverse})
	k3, _ := s.joinRun(b, st)
	s.leaveRun(k1, Report{Ops: 10, Bytes: 40960}, false)
	assert.Empty(t, got, "one stream of the test is still running")
	s.leaveRun(k3, Report{Ops: 5, Bytes: 20480}, true)
	s.leaveRun(k2, Report{Ops: 7, Bytes: 28672}, false)
	assert.Equal(t, []RunResult{
		{Client: b, Test: TestWrite, Size: 4096, Streams: 1, Failed: 1, Ops: 5, Bytes: 20480},
		{Client: a, Test: TestWrite, Size: 4096, Streams: 2, Reverse: 1, Ops: 17, Bytes: 69632},
	}, got)
	assert.Empty(t, s.runs)
}
