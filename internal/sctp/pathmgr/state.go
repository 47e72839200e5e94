package pathmgr

// State is a destination's reachability.
type State uint8

const (
	// Unconfirmed: learnt from the peer's INIT or INIT ACK and not yet
	// proven to be the peer's (RFC 9260 §5.4). It gets nothing but
	// HEARTBEATs carrying a nonce.
	Unconfirmed State = iota
	// Active: reachable; may carry DATA.
	Active
	// PotentiallyFailed: its error counter passed PF.Max.Retrans (RFC
	// 7829 §4): no DATA while another path is Active, HEARTBEATs every RTO.
	PotentiallyFailed
	// Inactive: its error counter passed Path.Max.Retrans (RFC 9260 §8.2).
	Inactive
	numStates
)

var stateNames = [numStates]string{"unconfirmed", "active", "potentially-failed", "inactive"}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return "invalid"
}

// event is what the association reports about one path.
type event uint8

const (
	// evTimeout: a T3-rtx expiry for DATA sent there, or a HEARTBEAT
	// not acknowledged within one RTO (RFC 9260 §8.2, §8.3).
	evTimeout event = iota
	// evConfirmed: a HEARTBEAT ACK carrying the nonce of our HEARTBEAT
	// (RFC 9260 §5.4, §8.3).
	evConfirmed
	// evAcked: a SACK newly acknowledged DATA last sent there (§8.2).
	evAcked
	numEvents
)
