package rdmap

import (
	"fmt"
	"sync"
)

// PD is a protection domain (RFC 5041 §8.2, RFC 5040 §8.1.1 item 1): an
// STag registered in one PD can only be used by Endpoints of the same PD.
type PD struct {
	dev *Device
	id  uint32

	mu        sync.Mutex
	endpoints map[*Endpoint]struct{}
}

// Device returns the device the PD belongs to.
func (pd *PD) device() *Device { return pd.dev }

// ID returns the PD's local identifier (never sent on the wire).
func (pd *PD) pdID() uint32 { return pd.id }

// Register makes buf a memory region of this PD with the given access
// rights and returns it with a fresh, unpredictable STag (RFC 5040 §8.1.1
// items 4, 5 and 8). buf is used in place: remote peers with the STag
// read and write it directly, within the rights granted.
func (pd *PD) Register(buf []byte, access Access, opts ...MROption) (*MR, error) {
	if access&^accessAll != 0 {
		return nil, fmt.Errorf("%w: unknown access bits %#x", ErrInvalidWR, uint8(access&^accessAll))
	}
	var cfg mrConfig
	for _, o := range opts {
		if o.Endpoint != nil {
			cfg.ep = o.Endpoint
		}
		if o.RemoteInvalidate {
			cfg.remoteInv = true
		}
		if o.BaseTO != 0 {
			cfg.baseTO = o.BaseTO
		}
	}
	if cfg.ep != nil && cfg.ep.pd != pd {
		return nil, fmt.Errorf("%w: MROption.Endpoint names an endpoint of another PD", ErrInvalidWR)
	}
	d := pd.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	idx, err := d.allocIndex()
	if err != nil {
		return nil, err
	}
	if err := d.reserveBytes(int64(len(buf))); err != nil {
		return nil, err
	}
	m := &MR{
		pd:        pd,
		index:     idx,
		key:       uint8(d.rand()),
		buf:       buf,
		access:    access,
		baseTO:    cfg.baseTO,
		ep:        cfg.ep,
		remoteInv: cfg.remoteInv,
		valid:     true,
	}
	d.mrs[idx] = m
	return m, nil
}

func (pd *PD) addEndpoint(ep *Endpoint) {
	pd.mu.Lock()
	pd.endpoints[ep] = struct{}{}
	pd.mu.Unlock()
}

func (pd *PD) removeEndpoint(ep *Endpoint) {
	pd.mu.Lock()
	delete(pd.endpoints, ep)
	pd.mu.Unlock()
}

// fence waits until no Endpoint of the PD is in the middle of placing a
// received tagged segment, and no Atomic Operation of the device is in
// the middle of its read-modify-write. After an MR's STag was made
// invalid, this guarantees that the network can no longer modify the
// buffer (RFC 5040 §8.1.1 item 6): placement or an atomic that validated
// the STag before the change has finished, and one after it fails
// validation. Untagged segments are placed into posted receive buffers,
// which no STag names.
func (pd *PD) fence() {
	pd.mu.Lock()
	eps := make([]*Endpoint, 0, len(pd.endpoints))
	for ep := range pd.endpoints {
		eps = append(eps, ep)
	}
	pd.mu.Unlock()
	for _, ep := range eps {
		ep.rxMu.Lock()
		ep.rxMu.Unlock() //nolint:staticcheck // an intentional barrier
	}
	// An Atomic Request's target is validated again and modified under
	// atomicMu by the responder (executeAtomic, RFC 7306 §5.3), not on
	// the receive path.
	pd.dev.atomicMu.Lock()
	pd.dev.atomicMu.Unlock() //nolint:staticcheck // an intentional barrier
}
