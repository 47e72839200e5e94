package iwarpwire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMPAMULPDU_RFC5044_4_5: the worked values of the §4.5 formula and its
// clamps (§3: at most 64768; §4.5: not below 128).
func TestMPAMULPDU_RFC5044_4_5(t *testing.T) {
	// EMSS 1460 without markers: 1460 - (6 + 0).
	assert.Equal(t, 1454, MPAMULPDU(1460, false))
	// With markers: 1460 - (6 + 4*3 + 0) = 1442.
	assert.Equal(t, 1442, MPAMULPDU(1460, true))
	// EMSS 1461: EMSS mod 4 = 1.
	assert.Equal(t, 1454, MPAMULPDU(1461, false))
	assert.Equal(t, 128, MPAMULPDU(0, true))
	assert.Equal(t, 128, MPAMULPDU(100, false))
	assert.Equal(t, 64768, MPAMULPDU(1<<20, false))
	assert.Equal(t, 64486, MPAMULPDU(65000, true), "65000 - (6 + 4*127 + 0)")
}
