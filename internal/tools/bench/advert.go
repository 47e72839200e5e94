package bench

import (
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/workload"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// advertLen is the length of an Advert message: magic, status, 7
// reserved octets, then the Region, whose STag at offset 12 keeps
// Wireshark's RPC-over-RDMA heuristic (a message type there) off it.
const advertLen = 12 + workload.RegionLen

const advertMagic = "SRA2"

// Status is the verdict of an Advert or Report.
type Status uint8

// Statuses.
const (
	statusOK          Status = 0 // accepted / succeeded
	statusBadSetup    Status = 1 // the Setup was malformed
	statusTooLarge    Status = 2 // message size above the server's limit
	statusVerifyError Status = 3 // data or count verification failed
	statusFailed      Status = 4 // the run failed at the sender of the message
	statusNoMemory    Status = 5 // the server's buffer memory budget is exhausted
	statusStopped     Status = 6 // the server was told to stop during the run
	statusMax                = statusStopped
)

// String describes the status for error messages.
func (s Status) String() string {
	switch s {
	case statusOK:
		return "ok"
	case statusBadSetup:
		return "server rejected the test set-up"
	case statusTooLarge:
		return "message size above the server's --max-size"
	case statusVerifyError:
		return "verification failed at the server"
	case statusFailed:
		return "the run failed at the server"
	case statusNoMemory:
		return "the server's buffer memory budget (--max-memory) cannot hold this test's buffers now"
	case statusStopped:
		return ErrServerEnded.Error()
	}
	return "unknown status"
}

// err is the client's error for a Report or Advert carrying s (not
// statusOK): ErrServerEnded for statusStopped, else errRefused.
func (s Status) err() error {
	if s == statusStopped {
		return ErrServerEnded
	}
	return fmt.Errorf("%w: %v", errRefused, s)
}

// advertMsg is the Advert, each side's second message on a stream (its
// layout is in docs/cli.md): the registered buffer the peer may target
// with Writes, Reads and Atomics, as the module's one Region encoding,
// its Tagged Offsets starting at 0 (rdmap's). A non-zero Status refuses
// the test; the Region is then zero.
type advertMsg struct {
	Status Status
	workload.Region
}

// peerBuffer is what a conn keeps of its peer's Advert: 16 octets, where
// a Region takes 24 (a server holds a conn per idle stream).
type peerBuffer struct {
	STag   uint32
	Length uint64
}

// appendTo appends the encoded message; it allocates nothing when b has
// advertLen octets of spare capacity.
func (a *advertMsg) appendTo(b []byte) []byte {
	b = append(b, advertMagic...)
	b = append(b, uint8(a.Status), 0, 0, 0, 0, 0, 0, 0)
	return a.Region.Append(b)
}

// parseAdvert decodes an Advert at the start of b.
func parseAdvert(b []byte) (advertMsg, int, error) {
	if len(b) < advertLen {
		return advertMsg{}, 0, malformed("advert", "%d octets, want %d", len(b), advertLen)
	}
	if string(b[:4]) != advertMagic {
		return advertMsg{}, 0, malformed("advert", "bad magic %q", b[:4])
	}
	if b[5]|b[6]|b[7]|b[8]|b[9]|b[10]|b[11] != 0 {
		return advertMsg{}, 0, malformed("advert", "reserved octets not zero")
	}
	r, err := workload.ParseRegion(b[12:])
	if err != nil {
		return advertMsg{}, 0, malformed("advert", "%v", err)
	}
	a := advertMsg{Status: Status(b[4]), Region: r}
	if a.Status > statusMax {
		return a, 0, malformed("advert", "unknown status %d", a.Status)
	}
	if a.Status == statusOK && a.STag == 0 {
		return a, 0, malformed("advert", "STag 0 advertised")
	}
	if a.TO != 0 {
		return a, 0, malformed("advert", "TO %#x advertised, a buffer's Tagged Offsets start at 0", a.TO)
	}
	return a, advertLen, nil
}

// regionOf is what an Advert says of mr.
func regionOf(mr *rdmap.MR) workload.Region {
	return workload.Region{STag: mr.STag(), TO: mr.BaseTO(), Length: uint64(len(mr.Bytes()))}
}
