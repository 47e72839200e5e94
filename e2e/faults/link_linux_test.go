//go:build linux

package faults

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/netem"
)

// impairment is a named netem profile, applied in each direction.
type impairment struct {
	Name string
	netem.Profile
}

// link joins two network namespaces A and B by an impaired link
// (internal/tools/netem): a veth pair with the kernel's netem where the kernel
// has sch_netem, otherwise two TUN devices joined by the userspace model.
// FAULTS_LINK=netem or =tun forces a backend.
type link struct {
	*netem.Link
	addrA, addrB string
	backend      string
}

// requireRoot fails without root: make test runs as root (CI included).
func requireRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("full tier only (make test): needs root and network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the network namespace fault tests need root (CAP_NET_ADMIN); make test runs as root")
	}
}

func newLink(t *testing.T, p impairment) *link {
	t.Helper()
	requireRoot(t)
	nl, err := netem.NewLink(p.Profile, netem.LinkOptions{Backend: os.Getenv("FAULTS_LINK")})
	require.NoError(t, err)
	t.Cleanup(nl.Close)
	t.Logf("link: %s backend, %v", nl.Backend, p.Profile)
	return &link{Link: nl, addrA: nl.AddrA, addrB: nl.AddrB, backend: nl.Backend}
}

// blackhole drops everything from now on, both ways.
func (l *link) blackhole(t *testing.T) {
	t.Helper()
	if l.backend == netem.BackendKernel {
		require.NoError(t, l.SetProfile(netem.Profile{Loss: 1}))
		return
	}
	require.NoError(t, l.SetDown(true))
}

func (l *link) inA(fn func() error) error { return l.InA(fn) }
func (l *link) inB(fn func() error) error { return l.InB(fn) }

// checkImpaired asserts that the emulated link did impair the traffic
// (the userspace backend counts what it did; the kernel's is trusted).
func (l *link) checkImpaired(t *testing.T, p impairment) {
	t.Helper()
	if l.backend != netem.BackendTUN {
		return
	}
	ab, ba := l.Counters()
	t.Logf("link A→B %+v, B→A %+v", ab, ba)
	if p.Loss > 0 {
		assert.Positive(t, ab.Lost+ba.Lost, "no packet lost")
	}
	if p.Duplicate > 0 {
		assert.Positive(t, ab.Duplicated+ba.Duplicated, "no packet duplicated")
	}
	if p.Reorder > 0 {
		assert.Positive(t, ab.Early+ba.Early, "no packet reordered")
	}
}
