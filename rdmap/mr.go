package rdmap

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// Access is a set of memory access rights (RFC 5040 §8.1.1 item 5). Local
// read access is implicit.
type Access uint8

// Access rights.
const (
	// LocalWrite lets the local RNIC write the region: needed for the sink
	// of an RDMA Read.
	LocalWrite Access = 1 << iota
	// RemoteRead lets the peer read the region with RDMA Read.
	RemoteRead
	// RemoteWrite lets the peer write the region with RDMA Write.
	RemoteWrite
	// RemoteAtomic lets the peer target the region with Atomic Operations
	// (RFC 7306 §5).
	RemoteAtomic

	accessAll = LocalWrite | RemoteRead | RemoteWrite | RemoteAtomic
)

// names lists the rights, for error messages.
func (a Access) names() string {
	var s []string
	for _, x := range []struct {
		b Access
		n string
	}{{LocalWrite, "LocalWrite"}, {RemoteRead, "RemoteRead"}, {RemoteWrite, "RemoteWrite"}, {RemoteAtomic, "RemoteAtomic"}} {
		if a&x.b != 0 {
			s = append(s, x.n)
		}
	}
	if len(s) == 0 {
		return "LocalRead"
	}
	return strings.Join(s, "|")
}

type mrConfig struct {
	ep        *Endpoint
	remoteInv bool
	baseTO    uint64
}

// MROption configures a registration (PD.Register); the fields of several
// are combined.
type MROption struct {
	// Endpoint, if set, limits the STag's scope to one RDMAP Stream (RFC
	// 5040 §8.1.1 item 2, RFC 5041 §8.2 "DDP Stream association"): any
	// other Endpoint using it, even in the same PD, gets "STag not
	// associated".
	Endpoint *Endpoint
	// RemoteInvalidate allows the peer to invalidate the STag with a Send
	// with Invalidate (RFC 5040 §5.3). It takes effect only for an STag
	// bound to the receiving Endpoint: an STag shared by several Streams
	// must not be remotely invalidated (RFC 5040 §8.1.1 item 7).
	RemoteInvalidate bool
	// BaseTO is the Tagged Offset of the region's first octet (default 0).
	// RFC 5040 §5.1: "The Tagged Offset of a Tagged Buffer MAY start at a
	// non-zero value"; a VA-based TO is the buffer's address.
	BaseTO uint64
}

// MR is a registered memory region: a buffer, its access rights, its
// scope and its STag.
type MR struct {
	pd    *PD
	index uint32

	// Guarded by pd.dev.mu.
	key          uint8
	buf          []byte
	access       Access
	baseTO       uint64
	ep           *Endpoint
	remoteInv    bool
	valid        bool
	deregistered bool
}

// STag returns the region's current Steering Tag: index<<8 | key.
func (m *MR) STag() uint32 {
	m.pd.dev.mu.RLock()
	defer m.pd.dev.mu.RUnlock()
	return m.index<<8 | uint32(m.key)
}

// Bytes returns the registered buffer.
func (m *MR) Bytes() []byte {
	m.pd.dev.mu.RLock()
	defer m.pd.dev.mu.RUnlock()
	return m.buf
}

// Uint64 reads the 8 octets at tagged offset to as the atomics of RFC
// 7306 §5.1 see them: in host byte order (binary.NativeEndian), under the
// lock the responder's read-modify-write holds. A target's initial value
// goes in with PutUint64, not binary.BigEndian: FetchAdd of 100 stored
// big-endian would find 0x6400000000000000 on a little-endian host.
func (m *MR) Uint64(to uint64) (uint64, error) {
	d := m.pd.dev
	d.atomicMu.Lock()
	defer d.atomicMu.Unlock()
	b, err := m.word(to)
	if err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint64(b), nil
}

// PutUint64 stores v at tagged offset to in host byte order, the value a
// later FetchAdd or CmpSwap on it finds (see Uint64).
func (m *MR) PutUint64(to, v uint64) error {
	d := m.pd.dev
	d.atomicMu.Lock()
	defer d.atomicMu.Unlock()
	b, err := m.word(to)
	if err != nil {
		return err
	}
	binary.NativeEndian.PutUint64(b, v)
	return nil
}

// word returns the 8 octets at tagged offset to.
func (m *MR) word(to uint64) ([]byte, error) {
	d := m.pd.dev
	d.mu.RLock()
	defer d.mu.RUnlock()
	if m.deregistered {
		return nil, ErrClosed
	}
	b, f := m.window(to, 8)
	if f != faultNone {
		return nil, fmt.Errorf("%w: 8 octets at TO %#x outside the region", errAccess, to)
	}
	return b, nil
}

// BaseTO returns the Tagged Offset of the region's first octet.
func (m *MR) BaseTO() uint64 {
	m.pd.dev.mu.RLock()
	defer m.pd.dev.mu.RUnlock()
	return m.baseTO
}

// Access returns the region's access rights.
func (m *MR) accessRights() Access {
	m.pd.dev.mu.RLock()
	defer m.pd.dev.mu.RUnlock()
	return m.access
}

// PD returns the region's protection domain.
func (m *MR) protectionDomain() *PD { return m.pd }

// isValid reports whether the STag is currently valid.
func (m *MR) isValid() bool {
	m.pd.dev.mu.RLock()
	defer m.pd.dev.mu.RUnlock()
	return m.valid
}

// Invalidate makes the STag invalid (local invalidation, RFC 5040 §3.2 "If
// the ULP disables an STag"). When it returns, no segment is being placed
// into the buffer and none will be (RFC 5040 §8.1.1 item 6). It must not be
// called from code running on an Endpoint's receive path.
func (m *MR) Invalidate() error {
	d := m.pd.dev
	d.mu.Lock()
	if m.deregistered {
		d.mu.Unlock()
		return ErrClosed
	}
	m.valid = false
	d.mu.Unlock()
	m.pd.fence()
	return nil
}

// Reregister points the region at buf with access and gives it a new key
// (the low 8 bits of the STag, chosen at random and different from the
// previous one), so the old STag stays invalid (RFC 5040 §8.1.1 item 4).
// Scope and base TO are kept. Use STag for the new value.
func (m *MR) Reregister(buf []byte, access Access) error {
	if access&^accessAll != 0 {
		return fmt.Errorf("%w: unknown access bits %#x", ErrInvalidWR, uint8(access&^accessAll))
	}
	d := m.pd.dev
	d.mu.Lock()
	if m.deregistered {
		d.mu.Unlock()
		return ErrClosed
	}
	delta := int64(len(buf) - len(m.buf))
	if err := d.reserveBytes(delta); err != nil {
		d.mu.Unlock()
		return err // the region is left as it was
	}
	m.valid = false
	d.mu.Unlock()
	m.pd.fence()
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.deregistered {
		d.regBytes -= delta // Deregister released the old size only
		return ErrClosed
	}
	old := m.key
	for m.key == old {
		m.key = uint8(d.rand())
	}
	m.buf, m.access, m.valid = buf, access, true
	return nil
}

// Deregister invalidates the STag and frees its slot in the STag table.
func (m *MR) Deregister() error {
	d := m.pd.dev
	d.mu.Lock()
	if m.deregistered {
		d.mu.Unlock()
		return ErrClosed
	}
	m.valid, m.deregistered = false, true
	delete(d.mrs, m.index)
	_ = d.reserveBytes(-int64(len(m.buf)))
	d.mu.Unlock()
	m.pd.fence()
	return nil
}

// invalidateRemote performs the invalidation requested by a Send with
// Invalidate received on ep (RFC 5040 §5.3, §7.2 checks 4 and 5). It runs
// on ep's receive path, which therefore is not placing anything; since the
// STag must be bound to ep, no other stream can be placing into it either.
func (d *Device) invalidateRemote(ep *Endpoint, stag uint32) (iwarp.TermCode, bool) {
	// Terminate codes, following Linux siw (siw_qp_rx.c): an STag that does not
	// exist or is already invalid is a Remote Operation Error "STag cannot be
	// Invalidated" (0/2/0x09); an existing STag the peer may not invalidate
	// (other PD, not bound to this stream, or registered without
	// MROption.RemoteInvalidate) is a Remote Protection Error "STag cannot be
	// Invalidated" (0/1/0x09).
	d.mu.Lock()
	defer d.mu.Unlock()
	m := d.mrs[stag>>8]
	if m == nil || m.key != uint8(stag) || !m.valid {
		return iwarp.Term.OperationCannotInvalidate, false
	}
	if m.pd != ep.pd || m.ep != ep || !m.remoteInv {
		return iwarp.Term.ProtectionCannotInvalidate, false
	}
	m.valid = false
	return iwarp.TermCode{}, true
}

// local resolves a local access of n octets at byte offset off of m for an
// operation posted on ep needing rights need (LocalWrite for a Read sink).
func (m *MR) local(ep *Endpoint, off uint64, n uint64, need Access) ([]byte, error) {
	d := m.pd.dev
	d.mu.RLock()
	defer d.mu.RUnlock()
	switch {
	case !m.valid:
		return nil, fmt.Errorf("%w: MR STag %#08x is not valid", errAccess, m.index<<8|uint32(m.key))
	case m.pd != ep.pd:
		return nil, fmt.Errorf("%w: MR of another PD", errAccess)
	case m.ep != nil && m.ep != ep:
		return nil, fmt.Errorf("%w: MR bound to another endpoint", errAccess)
	case m.access&need != need:
		return nil, fmt.Errorf("%w: MR lacks %s", errAccess, need.names())
	case off > uint64(len(m.buf)) || n > uint64(len(m.buf))-off:
		return nil, fmt.Errorf("%w: offset %d + %d beyond MR of %d octets", errAccess, off, n, len(m.buf))
	}
	return m.buf[off : off+n : off+n], nil
}
