package sctpllp

import (
	"fmt"
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// overShare aborts the association whose charge did not fit its share
// (err wraps errMemoryShare): counted, and the cause of Err and of every
// session's end. Called from the receive path: the ABORT is sent from
// another goroutine.
func (a *Association) overShare(err error) {
	a.mu.Lock()
	first := a.shareErr == nil
	if first {
		a.shareErr = fmt.Errorf("%w: %w", llp.ErrAborted, err)
	}
	a.mu.Unlock()
	if first {
		a.ctr.shareAborts.Add(1)
		shareAborts.Add(1)
		go a.stop(true)
	}
}

// reclaimMemory aborts the association when the process budget is full,
// it holds the most of it, and an association holding less than its fair
// part needs room (membudget.Account.SetReclaim): its end gives back all
// it holds. The sctp layer's receive accounts take part in the same
// contest, so the peer holding the most loses, at whichever layer.
func (a *Association) reclaimMemory() {
	a.overShare(fmt.Errorf("%w: the process budget is full and this association holds the most of it: %w",
		errMemoryShare, membudget.ErrExhausted))
}

// shareAborts counts the associations of the process aborted for their
// memory share.
var shareAborts atomic.Uint64

// ShareAborts is the number of associations this process aborted because
// what they made it hold did not fit their share (errMemoryShare).
func processShareAborts() uint64 { return shareAborts.Load() }
