//go:build linux

package netns

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
)

// DualPath is two hosts joined by two independent veth links, the
// multihoming test bed: link i joins A (dev "p<i>a", 10.x.<i+1>.1) and B
// (dev "p<i>b", 10.x.<i+1>.2). Each link can be cut (its devices down)
// or black-holed (a blackhole route for the far address on both hosts:
// packets vanish while the link stays up), and restored.
type DualPath struct {
	A, B string
	// AAddr[i] and BAddr[i] are the hosts' IPv4 addresses on link i.
	AAddr, BAddr [2]string
}

// NewDualPath creates the two namespaces (unique names) and both links
// at mtu. Call Destroy when done.
func NewDualPath(mtu int) (*DualPath, error) {
	var rb [3]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(rb[:])
	net := 10 + int(rb[0])%200
	d := &DualPath{A: "mpa" + id, B: "mpb" + id}
	m := strconv.Itoa(mtu)
	cmds := [][]string{{"netns", "add", d.A}, {"netns", "add", d.B},
		{"-n", d.A, "link", "set", "lo", "up"}, {"-n", d.B, "link", "set", "lo", "up"}}
	for i := range 2 {
		d.AAddr[i] = fmt.Sprintf("10.%d.%d.1", net, i+1)
		d.BAddr[i] = fmt.Sprintf("10.%d.%d.2", net, i+1)
		da, db := d.dev(i, "a"), d.dev(i, "b")
		cmds = append(cmds,
			[]string{"link", "add", da, "netns", d.A, "mtu", m, "type", "veth", "peer", "name", db, "netns", d.B, "mtu", m},
			[]string{"-n", d.A, "addr", "add", d.AAddr[i] + "/24", "dev", da},
			[]string{"-n", d.B, "addr", "add", d.BAddr[i] + "/24", "dev", db},
			[]string{"-n", d.A, "link", "set", da, "up"},
			[]string{"-n", d.B, "link", "set", db, "up"})
	}
	for _, c := range cmds {
		if _, err := IP(c...); err != nil {
			d.Destroy()
			return nil, err
		}
	}
	return d, nil
}

func (d *DualPath) dev(i int, side string) string { return "p" + strconv.Itoa(i) + side }

// Destroy deletes the namespaces (and so the links).
func (d *DualPath) Destroy() {
	_, _ = IP("netns", "del", d.A)
	_, _ = IP("netns", "del", d.B)
}

// Cut takes link i down on both ends: the kernel drops what is sent
// there and reports it unreachable.
func (d *DualPath) Cut(i int) error { return d.setLink(i, "down") }

// Restore brings link i up again after Cut.
func (d *DualPath) Restore(i int) error { return d.setLink(i, "up") }

func (d *DualPath) setLink(i int, state string) error {
	if _, err := IP("-n", d.A, "link", "set", d.dev(i, "a"), state); err != nil {
		return err
	}
	_, err := IP("-n", d.B, "link", "set", d.dev(i, "b"), state)
	return err
}

// BlackHole makes link i lose every packet while it stays up: each host
// routes the other's address on that link into a blackhole.
func (d *DualPath) BlackHole(i int) error { return d.blackhole(i, "add") }

// Heal removes the black hole of link i.
func (d *DualPath) Heal(i int) error { return d.blackhole(i, "del") }

func (d *DualPath) blackhole(i int, op string) error {
	if _, err := IP("-n", d.A, "route", op, "blackhole", d.BAddr[i]+"/32"); err != nil {
		return err
	}
	_, err := IP("-n", d.B, "route", op, "blackhole", d.AAddr[i]+"/32")
	return err
}

// LoseAToB makes link i lose, silently, every packet A sends on it while
// B's packets to A still arrive (an asymmetric failure): A's neighbour
// entry for B's address names a MAC address no device has, so B's device
// discards the frames as not its own and A learns nothing.
func (d *DualPath) LoseAToB(i int) error {
	_, err := IP("-n", d.A, "neigh", "replace", d.BAddr[i], "lladdr", "02:00:00:00:00:01",
		"dev", d.dev(i, "a"), "nud", "permanent")
	return err
}

// RestoreAToB undoes LoseAToB: A resolves B's address again.
func (d *DualPath) RestoreAToB(i int) error {
	_, err := IP("-n", d.A, "neigh", "del", d.BAddr[i], "dev", d.dev(i, "a"))
	return err
}

// SetLinkMTU sets the MTU of link i on both ends.
func (d *DualPath) SetLinkMTU(i, mtu int) error {
	if err := SetMTU(d.A, d.dev(i, "a"), mtu); err != nil {
		return err
	}
	return SetMTU(d.B, d.dev(i, "b"), mtu)
}

// Fragments returns the IPv4 and IPv6 fragments both hosts created and
// the reassemblies they required.
func (d *DualPath) Fragments() (int64, error) {
	var n int64
	for _, ns := range []string{d.A, d.B} {
		m, err := IPStats(ns)
		if err != nil {
			return 0, err
		}
		m6, err := IP6Stats(ns)
		if err != nil {
			return 0, err
		}
		n += m["FragCreates"] + m["ReasmReqds"] + m6["Ip6FragCreates"] + m6["Ip6ReasmReqds"]
	}
	return n, nil
}
