package sctpllp

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// slot is the per-stream-identifier state of an association: the current
// (or last) session on the stream, quarantine after it (RFC 5043 §6.6) and
// the erroneous label (RFC 5040 §7). Slots are created on first use and
// found by index, so the per-message cost does not depend on the number of
// streams.
type slot struct {
	sid uint16

	// rxMu serialises receive processing and every call into the
	// session's llp.Handler.
	rxMu sync.Mutex

	// mu serialises the changes of cur and erroneous and the decisions
	// made on them (slotAvailable); every chunk received reads both
	// (current) without it.
	mu        sync.Mutex
	cur       atomic.Pointer[session]
	erroneous atomic.Bool
}

func (sl *slot) current() (*session, bool) {
	return sl.cur.Load(), sl.erroneous.Load()
}

// streamFreer is implemented by transports that know when a reset stream
// identifier may carry a new session (the pion transport's StreamFree).
type streamFreer interface {
	StreamFree(sid uint16) bool
}

// available reports whether a new session may start on the slot from the
// local side: no session, or the previous one is over — both final chunks
// seen (or the quiet time elapsed since ours) and the transport has freed
// the identifier (RFC 5043 §6.6: "A DDP Stream Identifier MUST NOT be
// reused for another DDP Stream Session while any Data Chunk from a prior
// session might be outstanding").
func (a *Association) slotAvailable(sl *slot, now time.Time) error {
	if sl.erroneous.Load() {
		return errErroneous
	}
	if cur := sl.cur.Load(); cur != nil && !cur.over(now, a.cfg.QuietTime) {
		return backend.ErrStreamInUse
	}
	if f, ok := a.t.(streamFreer); ok && !f.StreamFree(sl.sid) {
		return backend.ErrStreamInUse
	}
	return nil
}
