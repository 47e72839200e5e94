package sctp

import (
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// ErrProcessMemory: the association was aborted with an Out of Resource
// cause (RFC 9260 §3.3.10.4) because the process-wide budget was full, it
// held the most of it, and an association holding less than its fair part
// needed room (membudget.Budget reclaims).
var ErrProcessMemory = fmt.Errorf("sctp: process memory budget reclaimed: %w", membudget.ErrExhausted)

// initReceiveBudget sets up the receive side's memory: the association's
// account in the process-wide budget (Config.memBudget in tests) and the
// reassembler charged to it. mu is held.
func (a *Association) initReceiveBudget() {
	if a.rxAcct == nil {
		b := a.cfg.memBudget
		if b == nil {
			b = membudget.Process
		}
		a.rxAcct = membudget.NewAccount(b, int64(a.cfg.ReceiveBuffer))
		a.rxAcct.SetReclaim(a.reclaimMemory)
	}
	if a.rs != nil {
		a.rs.Reset()
	}
	if m := int(a.maxMsg.Load()); a.rxCost == 0 && m > 0 {
		// Until DATA says otherwise: messages of a full packet each.
		a.rxCost = max(int64(rxClass(m)+msgOverhead)*rxCostUnit/int64(m), rxCostUnit)
	}
	a.rs = newReassembler(reassemblyConfig{Streams: a.tcb.inStreams, Account: a.rxAcct,
		MaxMessageFragments: a.cfg.MaxMessageFragments, MaxHeldFragments: a.cfg.MaxHeldFragments,
		Window: a.rt.Window(), Received: a.rt.Received})
}

// rwnd returns the a_rwnd to advertise (RFC 9260 §6.2): the octets of
// user data that what is left of the association's share (no more than
// what is left of the process-wide budget) can hold, at what received
// octets are charged (rxCost). Advertising the share itself let a sender
// overrun it by the buffers' overhead, and the chunks beyond were dropped
// and retransmitted, each time halving cwnd. A sixteenth of the share is
// kept out of the offer (rxHeadroom), as Linux TCP offers only part of
// its buffer: rxCost is an estimate, and data sent within the last offer
// that came dearer than estimated, while the share was full, was dropped.
// It first folds the DATA noted since the last call into rxCost.
func (a *Association) rwnd() uint32 {
	a.foldRxCost()
	free := max(a.freeShare()-a.rxHeadroom(), 0)
	if c := a.rxOfferCost(); c > rxCostUnit {
		free = free * rxCostUnit / c
	}
	return uint32(free)
}

// rxHeadroom is the part of the share rwnd keeps out of the offer.
func (a *Association) rxHeadroom() int64 { return int64(a.cfg.ReceiveBuffer) / 16 }

// rxOfferCost is the charge per received octet, in rxCostUnit, that the
// window is offered at: the average or the recent peak, the dearer.
func (a *Association) rxOfferCost() int64 { return max(a.rxCost, a.rxCostPeak, rxCostUnit) }

// rxCostUnit is rxCost's one octet charged per octet received.
const rxCostUnit = 1024

// freeShare returns what can still be charged: the association's share
// less what it holds, and no more than is left of the process budget.
func (a *Association) freeShare() int64 {
	if a.rxAcct == nil {
		return int64(a.cfg.ReceiveBuffer)
	}
	free := a.rxAcct.Limit() - a.rxAcct.Held()
	if b := a.rxAcct.Budget(); b.Limit()-b.Used() < free {
		free = b.Limit() - b.Used()
	}
	return max(free, 0)
}

// noteRxCost notes the charge of n octets of user data, for rxCost. A
// chunk delivered from a packet buffer charged already notes a charge of
// 0: the buffer's charge is spread over every chunk it holds. (Folded one
// chunk at a time, only the first chunk of a coalesced read counted, at
// the whole 64 KiB buffer: rxCost came out 12-18 times the octets and
// a_rwnd as small.)
func (a *Association) noteRxCost(charge, n int) {
	if n <= 0 || charge < 0 {
		return
	}
	a.rxCostCharge += int64(charge)
	a.rxCostOctets += int64(n)
}

// foldRxCost folds what noteRxCost noted since the last fold, the DATA of
// one or a few reads, into rxCost, an average over about the last eight,
// and rxCostPeak, the dearest of them with at least a packet's octets,
// decaying by 1/64 per fold: a read that fills its buffer by three
// quarters is charged 1.33 times, a copied packet 1.15 times, and a
// window offered at the average let the sender fill the share when
// dearer reads came, and the chunks beyond it were dropped.
func (a *Association) foldRxCost() {
	if a.rxCostOctets == 0 {
		return
	}
	if a.rxCost == 0 {
		a.rxCost = rxCostUnit
	}
	c := a.rxCostCharge * rxCostUnit / a.rxCostOctets
	a.rxCost += (c - a.rxCost) / 8
	a.rxCostPeak -= a.rxCostPeak / 64
	if a.rxCostOctets >= rxPeakOctets && c > a.rxCostPeak {
		a.rxCostPeak = c
	}
	a.rxCostCharge, a.rxCostOctets = 0, 0
}

// rxPeakOctets is the least user data of a fold that rxCostPeak takes:
// a lone small message (a request, a control message) is charged many
// times its octets but holds little.
const rxPeakOctets = 1024

// releaseReceive gives back the memory of octets delivered or dropped.
func (a *Association) releaseReceive(octets int) {
	if a.rxAcct != nil {
		a.rxAcct.Release(octets)
	}
}

// reclaimMemory aborts the association for the process-wide budget
// (ErrProcessMemory): ending it releases what its reassembly holds, and
// what is queued for delivery as it is handed over.
func (a *Association) reclaimMemory() {
	a.mu.Lock()
	defer a.mu.Unlock()
	const why = "the process-wide receive budget is full and this association holds the most of it"
	a.abortLocked(wire.AppendCause(nil, wire.CauseOutOfResource, nil),
		&AbortError{Local: true, Reason: why, Cause: ErrProcessMemory})
	a.discardUnstarted() // also after a graceful end, still unstarted
}
