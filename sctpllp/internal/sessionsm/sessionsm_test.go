package sessionsm

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTransition_Table_RFC5043_6: the transition function row by row (RFC
// 5043 §6, RFC 6581 §10 for the flavour of a reply).
func TestTransition_Table_RFC5043_6(t *testing.T) {
	type row struct {
		st     State
		ev     Event
		enh    bool
		evEnh  bool
		next   State
		action Action
	}
	rows := []row{
		{Idle, EvInitiate, false, false, InitReceived, ActNewSession},
		{Idle, EvSegment, false, false, Done, ActViolation},
		{Idle, EvTerminate, false, false, Done, ActViolation},
		{InitSent, EvAccept, false, false, Established, ActEstablish},
		{InitSent, EvAccept, true, true, Established, ActEstablish},
		{InitSent, EvAccept, true, false, Done, ActViolation},
		{InitSent, EvReject, false, false, Done, ActRejected},
		{InitSent, EvTerminate, true, false, Done, ActNonULPRejected},
		{InitSent, EvSegment, false, false, Done, ActViolation},
		{InitReceived, EvSegment, false, false, InitReceived, ActDeliver},
		{InitReceived, EvTerminate, false, false, Done, ActWithdrawn},
		{InitReceived, EvInitiate, false, false, Done, ActViolation},
		{Established, EvSegment, false, false, Established, ActDeliver},
		{Established, EvTerminate, false, false, Done, ActPeerTerminate},
		{Established, EvInitiate, false, false, Done, ActViolation},
		{Established, EvAccept, false, false, Done, ActViolation},
		{LocalClosed, EvSegment, false, false, LocalClosed, ActDeliver},
		{LocalClosed, EvTerminate, false, false, Done, ActPeerFinal},
		{Done, EvSegment, false, false, Done, ActDrop},
	}
	for _, r := range rows {
		next, act := Transition(r.st, r.ev, r.enh, r.evEnh)
		assert.Equal(t, r.next, next, "%v ev %d", r.st, r.ev)
		assert.Equal(t, r.action, act, "%v ev %d", r.st, r.ev)
	}
}
