package ddp

import (
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// Control is the DDP Control Field (RFC 5041 §4.1); its bits and encoder
// are iwarp's (iwarp.DDPControlTagged, iwarpwire.NewDDPControl, ...).
type Control = iwarpwire.DDPControl

// checkControl validates the control field as a Data Sink must (RFC 5041
// §4.1): DV must be iwarpwire.DDPVersion; the reserved bits are not checked. A
// bad DV is reported as the *Error of iwarp.Term.DDPTaggedVersion when T is
// set and of iwarp.Term.DDPUntaggedVersion otherwise (RFC 5041 §7.2),
// wrapping ErrVersion.
func checkControl(c Control) error {
	if c.DV() == iwarpwire.DDPVersion {
		return nil
	}
	if c.Tagged() {
		return NewError(iwarp.Term.DDPTaggedVersion, errVersion)
	}
	return NewError(iwarp.Term.DDPUntaggedVersion, errVersion)
}

// parseControl parses and checks the control field at the start of b. It
// returns the field, the octets consumed (1) and an error: a *Error of
// iwarp.Term.DDPLocalCatastrophic wrapping ErrTruncated if b is empty, or the
// Version error of CheckControl.
func parseControl(b []byte) (Control, int, error) {
	if len(b) < iwarpwire.DDPControlLen {
		return 0, 0, NewError(iwarp.Term.DDPLocalCatastrophic, errTruncated)
	}
	c := Control(b[0])
	if err := checkControl(c); err != nil {
		return c, 0, err
	}
	return c, iwarpwire.DDPControlLen, nil
}
