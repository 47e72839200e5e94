package bench

import (
	"encoding/binary"
	"fmt"
)

// AdvertLen is the length of an Advert message.
const AdvertLen = 24

const advertMagic = "SRA1"

// Status is the verdict of an Advert or Report.
type Status uint8

// Statuses.
const (
	StatusOK          Status = 0 // accepted / succeeded
	StatusBadSetup    Status = 1 // the Setup was malformed
	StatusTooLarge    Status = 2 // message size above the server's limit
	StatusVerifyError Status = 3 // data or count verification failed
	StatusFailed      Status = 4 // the run failed at the sender of the message
	StatusNoMemory    Status = 5 // the server's buffer memory budget is exhausted
	StatusStopped     Status = 6 // the server was told to stop during the run
	statusMax                = StatusStopped
)

// String describes the status for error messages.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusBadSetup:
		return "server rejected the test set-up"
	case StatusTooLarge:
		return "message size above the server's --max-size"
	case StatusVerifyError:
		return "verification failed at the server"
	case StatusFailed:
		return "the run failed at the server"
	case StatusNoMemory:
		return "the server's buffer memory budget (--max-memory) cannot hold this test's buffers now"
	case StatusStopped:
		return ErrServerEnded.Error()
	}
	return "unknown status"
}

// err is the client's error for a Report or Advert carrying s (not
// StatusOK): ErrServerEnded for StatusStopped, else ErrRefused.
func (s Status) err() error {
	if s == StatusStopped {
		return ErrServerEnded
	}
	return fmt.Errorf("%w: %v", ErrRefused, s)
}

// Advert is each side's second message on a stream (docs/cli.md): the
// registered buffer the peer may target with Writes, Reads and Atomics.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Magic "SRA1"                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Status     |               Reserved (0)                    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                           STag                                |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        Reserved (0)                           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Buffer length (64 bits)                      |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The buffer's Tagged Offsets start at 0. A non-zero Status refuses the
// test; STag and length are then zero.
type Advert struct {
	Status Status
	STag   uint32
	Length uint64
}

// Len returns AdvertLen.
func (a *Advert) Len() int { return AdvertLen }

// Append appends the encoded message; it allocates nothing when b has
// AdvertLen octets of spare capacity.
func (a *Advert) Append(b []byte) []byte {
	b = append(b, advertMagic...)
	b = append(b, uint8(a.Status), 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, a.STag)
	b = binary.BigEndian.AppendUint32(b, 0)
	return binary.BigEndian.AppendUint64(b, a.Length)
}

// ParseAdvert decodes an Advert at the start of b.
func ParseAdvert(b []byte) (Advert, int, error) {
	if len(b) < AdvertLen {
		return Advert{}, 0, malformed("advert", "%d octets, want %d", len(b), AdvertLen)
	}
	if string(b[:4]) != advertMagic {
		return Advert{}, 0, malformed("advert", "bad magic %q", b[:4])
	}
	if b[5]|b[6]|b[7] != 0 || binary.BigEndian.Uint32(b[12:]) != 0 {
		return Advert{}, 0, malformed("advert", "reserved octets not zero")
	}
	a := Advert{Status: Status(b[4]), STag: binary.BigEndian.Uint32(b[8:]), Length: binary.BigEndian.Uint64(b[16:])}
	if a.Status > statusMax {
		return a, 0, malformed("advert", "unknown status %d", a.Status)
	}
	if a.Status == StatusOK && a.STag == 0 {
		return a, 0, malformed("advert", "STag 0 advertised")
	}
	return a, AdvertLen, nil
}
