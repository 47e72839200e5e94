package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSourceArgs(t *testing.T) {
	d, size, err := sourceArgs([]string{"sctp-source", "10.0.0.1:5000", "3s", "65536"})
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, d)
	assert.Equal(t, 65536, size)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tcp-source", "a:1", "3s"}, "harness tcp-source ADDR DURATION SIZE"},
		{[]string{"tcp-source", "a:1", "0s", "1"}, `tcp-source: duration "0s"`},
		{[]string{"sctp-source", "a:1", "x", "1"}, `sctp-source: duration "x"`},
		{[]string{"sctp-source", "a:1", "1s", "0"}, `sctp-source: size "0"`},
		{[]string{"sctp-source", "a:1", "1s", "16777217"}, `sctp-source: size "16777217"`},
	} {
		_, _, err := sourceArgs(tc.args)
		assert.EqualError(t, err, tc.want, "%q", tc.args)
	}
}
