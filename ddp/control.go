package ddp

import "github.com/sctp-rdma/sctp-rdma/iwarp"

// Control is the DDP Control Field (RFC 5041 §4.1); its bits and encoder
// are iwarp's (iwarp.DDPControlTagged, iwarp.NewDDPControl, ...).
type Control = iwarp.DDPControl

// checkControl validates the control field as a Data Sink must (RFC 5041
// §4.1): DV must be iwarp.DDPVersion; the reserved bits are not checked. A
// bad DV is reported as the *Error of iwarp.TermDDPTaggedVersion when T is
// set and of iwarp.TermDDPUntaggedVersion otherwise (RFC 5041 §7.2),
// wrapping ErrVersion.
func checkControl(c Control) error {
	if c.DV() == iwarp.DDPVersion {
		return nil
	}
	if c.Tagged() {
		return NewError(iwarp.TermDDPTaggedVersion, errVersion)
	}
	return NewError(iwarp.TermDDPUntaggedVersion, errVersion)
}

// parseControl parses and checks the control field at the start of b. It
// returns the field, the octets consumed (1) and an error: a *Error of
// iwarp.TermDDPLocalCatastrophic wrapping ErrTruncated if b is empty, or the
// Version error of CheckControl.
func parseControl(b []byte) (Control, int, error) {
	if len(b) < iwarp.DDPControlLen {
		return 0, 0, NewError(iwarp.TermDDPLocalCatastrophic, errTruncated)
	}
	c := Control(b[0])
	if err := checkControl(c); err != nil {
		return c, 0, err
	}
	return c, iwarp.DDPControlLen, nil
}
