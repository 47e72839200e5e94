package ddp_test

import (
	"fmt"
	"sync"

	"github.com/sctp-rdma/sctp-rdma/ddp"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// inbox is a ULP whose lock guards its DDP receiver: it posts buffers and
// reads what was delivered under mu, and Deliver runs with mu held.
type inbox struct {
	mu   sync.Mutex
	recv *ddp.Receiver
	got  []string
}

func (b *inbox) TaggedTarget(*iwarpwire.DDPTaggedHeader, int) ([]byte, error) {
	return nil, iwarpwire.NewDDPError(iwarp.Term.DDPInvalidSTag, nil) // no tagged buffers
}
func (b *inbox) CheckUntagged(*iwarpwire.DDPUntaggedHeader) error { return nil }
func (b *inbox) Deliver(m *ddp.Message) error {
	b.got = append(b.got, string(m.Buffer)) // mu is held
	return nil
}
func (b *inbox) Failed(*ddp.RecvError) {}
func (b *inbox) Closed(error)          {}

func ExampleNewReceiverGuarded() {
	b := &inbox{}
	b.recv = ddp.NewReceiverGuarded(b, 1, &b.mu)

	b.mu.Lock() // the ULP's lock: PostUntagged does not take one
	msn, _ := b.recv.PostUntagged(0, make([]byte, 16), 0)
	b.mu.Unlock()

	// The LLP hands over one untagged segment: queue 0, the MSN just
	// posted for, offset 0, last.
	h := iwarpwire.DDPUntaggedHeader{Last: true, QN: 0, MSN: msn, MO: 0}
	seg := append(h.Append(nil), "hello"...)
	if err := b.recv.HandleSegment(seg); err != nil {
		fmt.Println(err)
	}

	b.mu.Lock()
	fmt.Println(msn, b.got)
	b.mu.Unlock()
	// Output: 1 [hello]
}
