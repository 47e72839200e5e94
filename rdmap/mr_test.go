package rdmap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMR_Lifecycle(t *testing.T) {
	dev := newDevice(2, 0)
	pd := dev.AllocPD()
	buf := make([]byte, 10)
	m, err := pd.Register(buf, RemoteRead|RemoteWrite, MROption{BaseTO: 100})
	require.NoError(t, err)
	assert.Equal(t, 10, len(m.Bytes()))
	assert.Equal(t, uint64(100), m.BaseTO())
	assert.Equal(t, RemoteRead|RemoteWrite, m.accessRights())
	assert.Equal(t, "RemoteRead|RemoteWrite", m.accessRights().names())
	assert.Equal(t, "LocalRead", Access(0).names())
	assert.Same(t, pd, m.protectionDomain())
	assert.Same(t, dev, pd.device())
	assert.True(t, m.isValid())
	assert.Equal(t, &buf[0], &m.Bytes()[0])
	_, err = pd.Register(nil, 0x80)
	require.ErrorIs(t, err, ErrInvalidWR)
	_, err = pd.Register(nil, 0)
	require.NoError(t, err)
	_, err = pd.Register(nil, 0)
	require.ErrorIs(t, err, ErrResourceLimit)
	require.NoError(t, m.Invalidate())
	assert.False(t, m.isValid())
	require.NoError(t, m.Reregister(make([]byte, 4), RemoteRead))
	assert.True(t, m.isValid())
	assert.Equal(t, 4, len(m.Bytes()))
	require.ErrorIs(t, m.Reregister(nil, 0x40), ErrInvalidWR)
	require.NoError(t, m.Deregister())
	assert.Equal(t, 1, dev.numMRs())
	require.ErrorIs(t, m.Deregister(), ErrClosed)
	require.ErrorIs(t, m.Invalidate(), ErrClosed)
	require.ErrorIs(t, m.Reregister(nil, 0), ErrClosed)
}

// RFC 5040 §7.2 checks 4a-4e in order, through the device.
func TestDevice_RemoteChecks_RFC5040_7_2(t *testing.T) {
	dev := newDevice(0, 0)
	pd := dev.AllocPD()
	a, b := newPipes()
	ep, err := pd.NewEndpoint(a, EndpointConfig{})
	require.NoError(t, err)
	defer func() { require.NoError(t, ep.Close(t.Context())); _ = b.Close() }()
	m, err := pd.Register(make([]byte, 16), RemoteRead, MROption{BaseTO: 1 << 63})
	require.NoError(t, err)
	s := m.STag()
	tests := []struct {
		name string
		stag uint32
		to   uint64
		n    uint64
		need Access
		want stagFault
	}{
		{"ok", s, 1 << 63, 16, RemoteRead, faultNone},
		{"ok tail", s, 1<<63 + 15, 1, RemoteRead, faultNone},
		{"zero length not bounds-checked", s, 0, 0, RemoteRead, faultNone},
		{"invalid", s ^ 0x100, 1 << 63, 1, RemoteRead, faultInvalidSTag},
		{"key", s ^ 1, 1 << 63, 1, RemoteRead, faultInvalidSTag},
		{"access", s, 1 << 63, 1, RemoteWrite, faultAccess},
		{"TO below base", s, 1<<63 - 1, 1, RemoteRead, faultBounds},
		{"TO past end", s, 1<<63 + 16, 1, RemoteRead, faultBounds},
		{"end past end", s, 1<<63 + 8, 9, RemoteRead, faultBounds},
		{"wrap", s, 1<<63 + 8, 1 << 63, RemoteRead, faultWrap},
	}
	for _, tc := range tests {
		_, _, f := dev.remote(ep, tc.stag, tc.to, tc.n, tc.need)
		assert.Equal(t, tc.want, f, tc.name)
	}
	other := dev.AllocPD()
	m2, err := other.Register(make([]byte, 16), RemoteRead)
	require.NoError(t, err)
	_, _, f := dev.remote(ep, m2.STag(), 0, 1, RemoteRead)
	assert.Equal(t, faultNotAssociated, f)
	_, err = other.Register(nil, 0, MROption{Endpoint: ep})
	require.ErrorIs(t, err, ErrInvalidWR)
}

// TestResourceLimits_RegisteredMemory: the device caps the regions and the
// octets registered at once (RFC 5041 §8.3.2 item 5: an RNIC bounds the
// resources a consumer may allocate); refused registrations change
// nothing, and deregistration gives the room back.
func TestResourceLimits_RegisteredMemory(t *testing.T) {
	dev := newDevice(3, 10<<10)
	pd := dev.AllocPD()
	a, err := pd.Register(make([]byte, 6<<10), RemoteWrite)
	require.NoError(t, err)
	_, err = pd.Register(make([]byte, 5<<10), RemoteWrite)
	require.ErrorIs(t, err, ErrResourceLimit)
	assert.Equal(t, int64(6<<10), dev.registeredBytes())
	assert.Equal(t, 1, dev.numMRs())

	b, err := pd.Register(make([]byte, 4<<10), RemoteWrite)
	require.NoError(t, err)
	oldB := b.STag()
	require.ErrorIs(t, b.Reregister(make([]byte, 5<<10), RemoteWrite), ErrResourceLimit)
	assert.Equal(t, oldB, b.STag(), "a refused re-registration leaves the region as it was")
	require.NoError(t, b.Reregister(make([]byte, 1<<10), RemoteWrite))
	assert.Equal(t, int64(7<<10), dev.registeredBytes())

	c, err := pd.Register(nil, RemoteWrite)
	require.NoError(t, err)
	_, err = pd.Register(nil, RemoteWrite)
	require.ErrorIs(t, err, ErrResourceLimit, "MaxMRs")

	require.NoError(t, a.Deregister())
	require.NoError(t, b.Deregister())
	require.NoError(t, c.Deregister())
	assert.Equal(t, int64(0), dev.registeredBytes())
	assert.Equal(t, 0, dev.numMRs())
	_, err = pd.Register(make([]byte, 10<<10), RemoteWrite)
	require.NoError(t, err, "room given back")
}
