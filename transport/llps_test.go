package transport

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegistry: the zero Options mean the registry's first LLP,
// sctp-native; each name is there once with a description; an unknown
// name is errUnknownLLP naming every accepted one; each row's group of
// Options is a field of Options; LLPs hands out copies.
func TestRegistry(t *testing.T) {
	llps := LLPs()
	require.NotEmpty(t, llps)
	assert.Equal(t, SCTPNative, llps[0].Name, "the default, as the CLI's")
	seen := map[string]bool{}
	for _, l := range llps {
		assert.False(t, seen[l.Name], "%s listed twice", l.Name)
		seen[l.Name] = true
		assert.NotEmpty(t, l.Description, l.Name)
		assert.NotEmpty(t, l.Options, l.Name)
	}
	assert.Equal(t, map[string]bool{SCTPNative: true, SCTPPion: true, SCTPKernel: true, MPA: true}, seen)

	// Each row's group is a field of Options, and only one row's; the
	// fields each reads are its tags' (sctp-kernel has no MTU).
	groups := map[string]int{}
	for _, e := range registry {
		_, ok := reflect.TypeFor[Options]().FieldByName(e.group)
		assert.True(t, ok, "%s's group %s is a field of Options", e.name, e.group)
		groups[e.group]++
	}
	for g, n := range groups {
		assert.Equal(t, 1, n, "group %s is one LLP's", g)
	}
	assert.Equal(t, []string{"Streams", "AllowMissingAdaptation", "LocalAddr"}, llps[2].Options)
	assert.Equal(t, []string{"MTU", "Streams", "AllowMissingAdaptation", "LocalAddr", "DTLS", "CongestionControl", "NoOffload"}, llps[0].Options)

	ln, err := Listen(Options{}, "127.0.0.1:0")
	require.NoError(t, err)
	assert.Equal(t, SCTPNative, ln.Stats().LLP)
	require.NoError(t, ln.Close())

	_, err = Listen(Options{LLP: "carrier-pigeon"}, "127.0.0.1:0")
	require.ErrorIs(t, err, errUnknownLLP)
	_, derr := Dial(t.Context(), Options{LLP: "carrier-pigeon"}, "127.0.0.1:1", 1, nil, nil)
	require.ErrorIs(t, derr, errUnknownLLP)
	for _, l := range llps {
		assert.Contains(t, err.Error(), l.Name)
	}

	llps[0].Name = "changed"
	llps[0].Options[0] = "changed"
	assert.Equal(t, SCTPNative, LLPs()[0].Name)
	assert.NotEqual(t, "changed", LLPs()[0].Options[0])
}
