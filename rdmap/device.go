package rdmap

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
)

// Device is the software "RNIC" of RFC 5040 §8.1.1: it owns the STag table
// shared by all protection domains and endpoints created from it, and the
// lock that makes Atomic Operations atomic with respect to each other
// across all RDMAP Streams of the device (RFC 7306 §5.3).
//
// STags are a random 24-bit slot index and a random 8-bit key that changes
// on every re-registration, hard to predict (RFC 5040 §8.1.1 item 8);
// STag 0 is never issued. The zero value is a Device without limits
// beyond the defaults; its fields are read by the first AllocPD.
type Device struct {
	// MaxMRs caps the number of registered memory regions (0: 1<<20).
	// Registration beyond it fails with ErrResourceLimit.
	MaxMRs int
	// MaxRegisteredBytes caps the octets registered at once across all
	// regions of the device (0: no cap beyond MaxMRs). Registration or
	// re-registration beyond it fails with ErrResourceLimit.
	MaxRegisteredBytes int64

	once sync.Once
	// The index is drawn from crypto/rand by random probing until a free,
	// non-zero slot is found, and so is the initial key, so that STags
	// sparsely populate the full 32-bit range, as on hardware RNICs.
	maxMRs   int
	maxBytes int64 // 0: unlimited

	regBytes int64 // octets registered; guarded by mu

	mu  sync.RWMutex
	mrs map[uint32]*MR // by 24-bit index

	// atomicMu serialises the read-modify-write of every Atomic Operation
	// executed by any Endpoint of this device (RFC 7306 §5.3, §5.4 rule 2).
	atomicMu sync.Mutex

	pdMu   sync.Mutex
	nextPD uint32

	// rand draws STag bits; crypto/rand unless a test replaces it to get
	// reproducible STags (the fuzz targets).
	rand func() uint32
}

// setup makes the empty STag table and takes the limits.
func (d *Device) setup() {
	d.maxMRs = d.MaxMRs
	if d.maxMRs <= 0 {
		d.maxMRs = 1 << 20
	}
	d.maxMRs = min(d.maxMRs, 1<<24-1)
	d.maxBytes = max(d.MaxRegisteredBytes, 0)
	d.mrs = make(map[uint32]*MR)
	if d.rand == nil {
		d.rand = random32
	}
}

// RegisteredBytes returns the octets of memory currently registered.
func (d *Device) registeredBytes() int64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.regBytes
}

// reserveBytes accounts n more registered octets (n may be negative),
// failing when MaxRegisteredBytes would be exceeded. Caller holds d.mu.
func (d *Device) reserveBytes(n int64) error {
	if n > 0 && d.maxBytes > 0 && d.regBytes+n > d.maxBytes {
		return fmt.Errorf("%w: %d octets registered, %d more requested, limit %d",
			ErrResourceLimit, d.regBytes, n, d.maxBytes)
	}
	d.regBytes += n
	return nil
}

// AllocPD allocates a new protection domain (RFC 5041 §8.2).
func (d *Device) AllocPD() *PD {
	d.once.Do(d.setup)
	d.pdMu.Lock()
	d.nextPD++
	id := d.nextPD
	d.pdMu.Unlock()
	return &PD{dev: d, id: id, endpoints: make(map[*Endpoint]struct{})}
}

// NumMRs returns the number of registered memory regions.
func (d *Device) numMRs() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.mrs)
}

func random32() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return binary.BigEndian.Uint32(b[:])
}

// allocIndex picks a free random non-zero 24-bit index. Caller holds d.mu.
func (d *Device) allocIndex() (uint32, error) {
	if len(d.mrs) >= d.maxMRs {
		return 0, ErrResourceLimit
	}
	for {
		idx := d.rand() & 0xffffff
		if idx == 0 {
			continue
		}
		if _, used := d.mrs[idx]; !used {
			return idx, nil
		}
	}
}

// stagFault is why a remote access through an STag was refused.
type stagFault uint8

const (
	faultNone          stagFault = iota
	faultInvalidSTag             // no such STag, key mismatch, or invalidated
	faultNotAssociated           // other PD, or bound to another stream
	faultAccess                  // access right missing
	faultBounds                  // TO or TO+length outside the region
	faultWrap                    // TO+length wraps 64 bits
)

// remote resolves an access of n octets at tagged offset to through stag
// on behalf of endpoint ep needing rights need, in the order of RFC 5040
// §7.2 (valid, associated, access, TO in range, no wrap, end in range). It
// returns the memory to place into or read from.
func (d *Device) remote(ep *Endpoint, stag uint32, to uint64, n uint64, need Access) ([]byte, *MR, stagFault) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	m := d.mrs[stag>>8]
	if m == nil || m.key != uint8(stag) || !m.valid {
		return nil, nil, faultInvalidSTag
	}
	// RFC 5040 §8.1.1 items 1 and 2: PD association and stream scope.
	if m.pd != ep.pd || (m.ep != nil && m.ep != ep) {
		return nil, m, faultNotAssociated
	}
	if m.access&need != need {
		return nil, m, faultAccess
	}
	if n == 0 {
		return nil, m, faultNone
	}
	buf, f := m.window(to, n)
	return buf, m, f
}

// window returns the n octets at tagged offset to. Caller holds d.mu.
func (m *MR) window(to, n uint64) ([]byte, stagFault) {
	if to < m.baseTO || to-m.baseTO >= uint64(len(m.buf)) {
		return nil, faultBounds
	}
	if to+n < to {
		return nil, faultWrap
	}
	off := to - m.baseTO
	if n > uint64(len(m.buf))-off {
		return nil, faultBounds
	}
	return m.buf[off : off+n : off+n], faultNone
}
