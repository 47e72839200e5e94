package pionlog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFactoryRoutesThroughSlog(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	lg := Factory(l).NewLogger("sctp")
	lg.Trace("trace: dropped")
	lg.Debugf("debug %d: dropped", 1)
	lg.Infof("association %d up", 7)
	lg.Warn("careful")
	lg.Errorf("failed: %s", "reason")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3, buf.String())
	var got []map[string]any
	for _, ln := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(ln), &m), "every line is JSON: %s", ln)
		got = append(got, m)
	}
	// One step lower: pion's info and warnings are slog Debug, its errors
	// Info.
	assert.Equal(t, "DEBUG", got[0]["level"])
	assert.Equal(t, "association 7 up", got[0]["msg"])
	assert.Equal(t, "sctp", got[0]["pion"])
	assert.Equal(t, "DEBUG", got[1]["level"])
	assert.Equal(t, "INFO", got[2]["level"])
	assert.Equal(t, "failed: reason", got[2]["msg"])
}

// A nil logger follows slog.Default at the time of each record.
func TestFactoryFollowsDefault(t *testing.T) {
	old := slog.Default()
	defer slog.SetDefault(old)
	lg := Factory(nil).NewLogger("dtls")
	var buf bytes.Buffer
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: LevelTrace})))
	lg.Tracef("handshake step %d", 3)
	assert.Contains(t, buf.String(), "handshake step 3")
	assert.Contains(t, buf.String(), "pion=dtls")
}
