package harness

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSpliceWAN(t *testing.T) {
	sec := []byte(WANBegin + "\nnew\n" + WANEnd + "\n")
	assert.Equal(t, "# page\n\n"+string(sec), string(SpliceWAN([]byte("# page\n"), sec)), "appended")
	old := "# page\n\n" + WANBegin + "\nold\n" + WANEnd + "\n\ntail\n"
	assert.Equal(t, "# page\n\n"+string(sec)+"tail\n", string(SpliceWAN([]byte(old), sec)), "replaced in place")
	assert.Equal(t, WANBegin+"\nold\n"+WANEnd+"\n", string(WANSection([]byte(old))))
	assert.Nil(t, WANSection([]byte("# page\n")))
	assert.Equal(t, string(sec), string(SpliceWAN(nil, sec)))
}

func TestWANMarkdown(t *testing.T) {
	r := &WANResults{Config: WANConfig{Runs: 1}, Backend: "tun", EmulatorUDP: 99.8, EmulatorTCP: 95.1}
	r.Config.defaults()
	r.Config.LLPs = []string{"sctp-native", "mpa"}
	r.Cells = []WANCell{{RTT: 10 * time.Millisecond, Loss: 0.001, Figures: []WANFigure{
		{LLP: "tcp", What: "raw", Value: 90},
		{LLP: "sctp-native", What: "raw", Value: 80, Base: 90, Ratio: 0.89},
		{LLP: "sctp-native", What: "write", Value: 70, Base: 90, Ratio: 0.78},
		{LLP: "mpa", What: "write", Err: errors.New("stalled")},
		{LLP: "tcp", What: "rtt", Value: 10.4},
		{LLP: "mpa", What: "rtt", Value: 10.6, Base: 10.4, Ratio: 1.02},
	}}}
	r.Outages = []Outage{{LLP: "tcp", Recovery: 612 * time.Millisecond}, {LLP: "mpa", Err: errors.New("no progress")}}
	var b bytes.Buffer
	r.Markdown(&b, []Plot{{Title: "t", Path: "img/wan.png"}})
	s := b.String()
	assert.True(t, strings.HasPrefix(s, WANBegin))
	assert.True(t, strings.HasSuffix(s, WANEnd+"\n"))
	for _, want := range []string{
		"UDP offered at 1.2x its rate arrived at 99.8 Mbit/s and raw TCP moved 95.1 Mbit/s",
		"| 10ms | 0.1% | 90 | 80 (0.89) |",
		"| 10ms | 0.1% | 70 (0.78) | error: stalled |",
		"| 10ms | 0.1% | 10.4 | | 10.6 (1.02) |",
		"| raw TCP | 612ms |", "| mpa | error: no progress |",
		"![t](img/wan.png)",
	} {
		assert.Contains(t, s, want)
	}
}
