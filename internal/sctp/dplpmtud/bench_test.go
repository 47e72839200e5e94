package dplpmtud

import (
	"testing"
	"time"
)

// BenchmarkConnWriteFits is the steady-state send path: a DATA packet that
// fits the path MTU passes through Conn.Write.
func BenchmarkConnWriteFits(b *testing.B) {
	n := newFakeNet(9000)
	c, err := NewConn(fakeConn{n}, ConnConfig{NoProbing: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pkt := packet([2]int{0, 1400})
	n.mu.Lock()
	n.mtu = 0 // drop everything: measure Conn, not the fake
	n.mu.Unlock()
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(pkt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConnWriteResplit cuts an 8 KiB packet of 1 KiB DATA chunks to a
// 1500-octet path.
func BenchmarkConnWriteResplit(b *testing.B) {
	n := newFakeNet(0)
	c, err := NewConn(fakeConn{n}, ConnConfig{NoProbing: true, Prober: ProberConfig{Max: 1500}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var cs [][2]int
	for range 7 {
		cs = append(cs, [2]int{0, 1100})
	}
	pkt := packet(cs...)
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(pkt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProberNext is the prober's per-timer cost.
func BenchmarkProberNext(b *testing.B) {
	p := NewProber(ProberConfig{Max: 9000}, time.Unix(0, 0))
	now := time.Unix(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		if size, ok := p.Next(now); ok {
			p.Acked(size, now)
		}
	}
}

// BenchmarkPathMTU is the per-segment cost of asking the path MTU.
func BenchmarkPathMTU(b *testing.B) {
	c, err := NewConn(fakeConn{newFakeNet(1500)}, ConnConfig{NoProbing: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	s := 0
	for b.Loop() {
		s += c.MaxMessage()
	}
	_ = s
}
