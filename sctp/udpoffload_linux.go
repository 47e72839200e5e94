//go:build linux

package sctp

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UDP segmentation offload (Linux 4.18, UDP_SEGMENT) sends a run of
// equal-size datagrams with one sendmsg: the kernel cuts the buffer into
// datagrams of the segment size (the last one may be shorter), in the
// device when it can, in software otherwise. Generic receive offload
// (Linux 5.0, UDP_GRO) is the other direction: a socket that asks for it
// may receive several datagrams of one flow in one read, with the
// segment size in a control message. Without them an SCTP packet of at
// most the path MTU costs one system call on each side (the cost is in
// docs/benchmarks.md).

// gsoMaxSegments is the most datagrams of one sendmsg (UDP_MAX_SEGMENTS
// is 64 on older kernels, 128 on newer ones).
const gsoMaxSegments = 64

// gsoMaxBytes bounds the octets of one sendmsg: the datagrams together
// must fit one IP packet before segmentation (65,535 octets with the
// IP and UDP headers; IPv6 needs room for its longer header).
const gsoMaxBytes = 65535 - 40 - 8

// udpOffloadSupported reports whether c can send with UDP_SEGMENT (the
// socket option is known to the kernel).
func udpOffloadSupported(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Control(func(fd uintptr) {
		_, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT)
		ok = err == nil
	})
	return ok
}

// enableGRO asks the kernel to coalesce received datagrams on c
// (UDP_GRO); it reports whether it will.
func enableGRO(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Control(func(fd uintptr) {
		ok = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil
	})
	return ok
}

// enablePktinfo asks the kernel to tell each read's destination address
// on c (IP_PKTINFO, and IPV6_RECVPKTINFO on an IPv6 socket, which also
// receives IPv4): a multihomed association's one wildcard socket then
// knows which of its addresses a packet reached. It reports whether the
// kernel will.
func enablePktinfo(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Control(func(fd uintptr) {
		v4 := unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1) == nil
		v6 := unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1) == nil
		ok = v4 || v6
	})
	return ok
}

// pktinfoOOBLen is the room for the control messages of enablePktinfo.
var pktinfoOOBLen = unix.CmsgSpace(unix.SizeofInet4Pktinfo) + unix.CmsgSpace(unix.SizeofInet6Pktinfo)

// pktinfoDst returns the destination address a read's control messages
// oob name, the zero Addr if none does. It allocates nothing.
func pktinfoDst(oob []byte) netip.Addr {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return netip.Addr{}
		}
		data := oob[unix.CmsgLen(0):l]
		switch {
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
			// struct in_pktinfo: ifindex, spec_dst, addr (the header's).
			return netip.AddrFrom4([4]byte(data[8:12]))
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
			return netip.AddrFrom16([16]byte(data[:16])).Unmap()
		}
		oob = oob[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(oob)):]
	}
	return netip.Addr{}
}

// gsoOOBLen is the room for the UDP_SEGMENT control message.
var gsoOOBLen = unix.CmsgSpace(2)

// groOOBLen is the room for the UDP_GRO control message a read may carry.
var groOOBLen = unix.CmsgSpace(4)

// newGSOControl returns a UDP_SEGMENT control message; setGSOSegment
// writes its segment size.
func newGSOControl() []byte {
	oob := make([]byte, gsoOOBLen)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level = unix.IPPROTO_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	return oob
}

// setGSOSegment sets the segment size of a control message from
// newGSOControl.
func setGSOSegment(oob []byte, seg int) {
	binary.NativeEndian.PutUint16(oob[unix.CmsgLen(0):], uint16(seg))
}

// groSegment returns the segment size of a read whose control messages
// are oob (0: the read holds one datagram). It allocates nothing.
func groSegment(oob []byte) int {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return 0
		}
		if h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_GRO && l >= unix.CmsgLen(4) {
			return int(binary.NativeEndian.Uint32(oob[unix.CmsgLen(0):]))
		}
		oob = oob[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(oob)):]
	}
	return 0
}

// offloadUnsupported reports whether a send error says the path cannot
// segment (a device without checksum offload answers EIO; a kernel or
// socket without UDP_SEGMENT, EINVAL or ENOPROTOOPT): the batch goes again
// datagram by datagram and offload stays off.
func offloadUnsupported(err error) bool {
	return errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOPROTOOPT) ||
		errors.Is(err, syscall.EOPNOTSUPP)
}

// gsoWriter sends a run of packets with one sendmsg and UDP_SEGMENT, each
// packet an iovec where it lies, so that no run is copied into one
// buffer first. Its header, vectors, control message and the function
// handed to the socket's RawConn are made once: a send allocates nothing.
type gsoWriter struct {
	rc    syscall.RawConn
	hdr   unix.Msghdr
	iovs  [gsoMaxSegments]unix.Iovec
	oob   []byte
	name  [unix.SizeofSockaddrInet6]byte // the peer's address; unused when connected
	nlen  uint32
	err   error
	write func(fd uintptr) bool
}

// newGSOWriter returns a writer to to over c (to zero: c is connected),
// nil if c has no RawConn.
func newGSOWriter(c *net.UDPConn, to netip.AddrPort) *gsoWriter {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	w := &gsoWriter{rc: rc, oob: newGSOControl()}
	if to.IsValid() {
		w.nlen = sockaddrOf(&w.name, to, c.LocalAddr())
	}
	w.write = w.send
	return w
}

// writeRun sends pkts (at most gsoMaxSegments, all of seg octets but the
// last, which may be shorter) as one datagram per packet.
func (w *gsoWriter) writeRun(pkts [][]byte, seg int) error {
	for i, p := range pkts {
		w.iovs[i].Base = &p[0]
		w.iovs[i].SetLen(len(p))
	}
	setGSOSegment(w.oob, seg)
	h := &w.hdr
	h.Iov = &w.iovs[0]
	h.SetIovlen(len(pkts))
	h.Control = &w.oob[0]
	h.SetControllen(len(w.oob))
	if w.nlen > 0 {
		h.Name = &w.name[0]
		h.Namelen = w.nlen
	}
	w.err = nil
	err := w.rc.Write(w.write)
	for i := range pkts {
		w.iovs[i].Base = nil
	}
	if err != nil {
		return err
	}
	return w.err
}

// send is the RawConn write function: one sendmsg of the run (a UDP
// sendmsg sends all of it or nothing).
func (w *gsoWriter) send(fd uintptr) bool {
	_, e, wait := sysSend(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&w.hdr)), 0)
	if e != 0 {
		w.err = e
	}
	return !wait
}

// sysSend makes a sending system call, again after EINTR; wait reports
// EAGAIN, on which the RawConn waits until the socket is writable.
func sysSend(trap, a1, a2, a3 uintptr) (r uintptr, e unix.Errno, wait bool) {
	for {
		r, _, e = unix.Syscall6(trap, a1, a2, a3, 0, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, 0, true
		}
		return r, e, false
	}
}

// mmsgMax is the most packets of one sendmmsg, mmsgMaxBytes about the
// most octets (what WriteMsgMore holds for one: four 64 KiB datagrams).
const (
	mmsgMax      = 16
	mmsgMaxBytes = 4 << 16
)

// mmsgWriter sends several datagrams with one sendmmsg (Linux 3.0). Its
// headers and the function handed to the socket's RawConn are made once,
// so a send allocates nothing.
type mmsgWriter struct {
	rc    syscall.RawConn
	hdrs  [mmsgMax]unix.Mmsghdr
	iovs  [mmsgMax]unix.Iovec
	name  [unix.SizeofSockaddrInet6]byte // the peer's address; unused when connected
	nlen  uint32
	n     int // datagrams of this call
	done  int // of which sent
	err   error
	write func(fd uintptr) bool
}

// newMMsgWriter returns a writer to to over c (to zero: c is connected),
// nil if c has no RawConn.
func newMMsgWriter(c *net.UDPConn, to netip.AddrPort) *mmsgWriter {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	w := &mmsgWriter{rc: rc}
	if to.IsValid() {
		w.nlen = sockaddrOf(&w.name, to, c.LocalAddr())
	}
	w.write = w.send
	return w
}

// sockaddrOf writes to's address for a socket bound to local into b and
// returns its length: an IPv4 address to an IPv6 socket is IPv4-mapped.
func sockaddrOf(b *[unix.SizeofSockaddrInet6]byte, to netip.AddrPort, local net.Addr) uint32 {
	la, _ := local.(*net.UDPAddr)
	v6sock := la != nil && la.IP.To4() == nil
	if to.Addr().Is4() && !v6sock {
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&b[0]))
		sa.Family = unix.AF_INET
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], to.Port())
		sa.Addr = to.Addr().As4()
		return unix.SizeofSockaddrInet4
	}
	sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(&b[0]))
	sa.Family = unix.AF_INET6
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], to.Port())
	sa.Addr = to.Addr().As16()
	return unix.SizeofSockaddrInet6
}

// writeMMsg sends pkts (at most mmsgMax) with as few sendmmsg calls as
// the socket takes. It returns the error of the first datagram not sent.
func (w *mmsgWriter) writeMMsg(pkts [][]byte) error {
	for i, p := range pkts {
		w.iovs[i].Base = &p[0]
		w.iovs[i].SetLen(len(p))
		h := &w.hdrs[i].Hdr
		h.Iov = &w.iovs[i]
		h.SetIovlen(1)
		if w.nlen > 0 {
			h.Name = &w.name[0]
			h.Namelen = w.nlen
		}
	}
	w.n, w.done, w.err = len(pkts), 0, nil
	var err error
	for w.done < w.n && err == nil && w.err == nil {
		err = w.rc.Write(w.write)
	}
	for i := range pkts {
		w.iovs[i].Base = nil
	}
	if err != nil {
		return err
	}
	return w.err
}

// send is the RawConn write function: one sendmmsg of what is left.
func (w *mmsgWriter) send(fd uintptr) bool {
	r, e, wait := sysSend(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&w.hdrs[w.done])), uintptr(w.n-w.done))
	switch {
	case e != 0:
		w.err = e
	case !wait:
		w.done += int(r)
	}
	return !wait
}

// inqProbe reports whether a datagram waits on a UDP socket (SIOCINQ: the
// size of the next one, 0 when none), for a reader that may leave a SACK
// to the read that follows. Its function value is made once: probing
// allocates nothing.
type inqProbe struct {
	rc   syscall.RawConn
	fn   func(fd uintptr)
	next int
}

func newInqProbe(c *net.UDPConn) *inqProbe {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	p := &inqProbe{rc: rc}
	p.fn = p.probe
	return p
}

func (p *inqProbe) probe(fd uintptr) {
	n, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	if err != nil {
		n = 0
	}
	p.next = n
}

// queued reports whether a datagram is ready to be read.
func (p *inqProbe) queued() bool {
	if p == nil {
		return false
	}
	p.next = 0
	_ = p.rc.Control(p.fn)
	return p.next > 0
}
