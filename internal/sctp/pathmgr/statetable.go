package pathmgr

// transition is the effect of an event on a path in a state. The handler
// may read the thresholds, so a timeout chooses between staying,
// PotentiallyFailed and Inactive.
type transition func(m *Manager, p *path) State

// table is the state x event dispatch of path management.
var table = [numStates][numEvents]transition{
	Unconfirmed: {
		evTimeout:   unconfirmedTimeout,
		evConfirmed: confirm,
		evAcked:     stay, // no DATA goes to an unconfirmed path (§5.4)
	},
	Active: {
		evTimeout:   countError,
		evConfirmed: clearErrors,
		evAcked:     clearErrors,
	},
	PotentiallyFailed: {
		evTimeout:   countError,
		evConfirmed: clearErrors, // RFC 7829 §4 step 5
		evAcked:     clearErrors, // RFC 7829 §4 step 6
	},
	Inactive: {
		evTimeout:   countError,
		evConfirmed: clearErrors, // RFC 9260 §8.3: a HEARTBEAT ACK makes it active
		evAcked:     clearErrors,
	},
}

func stay(_ *Manager, p *path) State { return p.state }

// confirm: RFC 9260 §5.4, a HEARTBEAT ACK with our nonce confirms the
// address; it is active from then on.
func confirm(_ *Manager, p *path) State {
	p.confirmed = true
	p.errors = 0
	return Active
}

// unconfirmedTimeout counts a verification probe that went unanswered;
// the path stays unconfirmed (and is probed less often, probeDelay).
func unconfirmedTimeout(_ *Manager, p *path) State {
	p.errors++
	return Unconfirmed
}

// clearErrors: RFC 9260 §8.2, the error counter is cleared by a SACK of
// DATA sent there or a HEARTBEAT ACK from it, and the path is active.
func clearErrors(_ *Manager, p *path) State {
	p.errors = 0
	return Active
}

// countError: RFC 9260 §8.2 and RFC 7829 §4 step 1-2, one more error;
// above PF.Max.Retrans the path is potentially failed, above
// Path.Max.Retrans inactive.
func countError(m *Manager, p *path) State {
	p.errors++
	switch {
	case p.errors > m.cfg.PathMaxRetrans:
		return Inactive
	case m.cfg.PFMaxRetrans >= 0 && p.errors > m.cfg.PFMaxRetrans:
		return PotentiallyFailed
	}
	return p.state
}
