//go:build linux

package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linux ethtool ioctl interface (include/uapi/linux/ethtool.h), for turning
// segmentation offloads off on an interface without the ethtool binary (the
// test VM has busybox only).
const (
	ethtoolGSSetInfo = 0x37 // ETHTOOL_GSSET_INFO
	ethtoolGStrings  = 0x1b // ETHTOOL_GSTRINGS
	ethtoolGFeatures = 0x3a // ETHTOOL_GFEATURES
	ethtoolSFeatures = 0x3b // ETHTOOL_SFEATURES
	ethSSFeatures    = 4    // ETH_SS_FEATURES
	ethGStringLen    = 32   // ETH_GSTRING_LEN
	ifNameSize       = 16
)

// ethtool issues one SIOCETHTOOL ioctl on ifname with data as the command
// buffer.
func ethtool(fd int, ifname string, data []byte) error {
	var ifr [40]byte // struct ifreq: name, then the ifr_data pointer
	copy(ifr[:ifNameSize-1], ifname)
	*(*uintptr)(unsafe.Pointer(&ifr[ifNameSize])) = uintptr(unsafe.Pointer(&data[0]))
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr[0])))
	runtime.KeepAlive(data)
	if e != 0 {
		return e
	}
	return nil
}

// setFeatures switches the named netdev features (as `ethtool -K` names
// them, e.g. "tx-sctp-segmentation") on or off on ifname and returns an
// error unless every one ended in the requested state.
func setFeatures(ifname string, on bool, names ...string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ne := binary.NativeEndian

	// Number of feature strings.
	info := make([]byte, 20) // cmd, reserved, sset_mask (u64), data[1]
	ne.PutUint32(info[0:], ethtoolGSSetInfo)
	ne.PutUint64(info[8:], 1<<ethSSFeatures)
	if err := ethtool(fd, ifname, info); err != nil {
		return fmt.Errorf("ETHTOOL_GSSET_INFO: %w", err)
	}
	count := int(ne.Uint32(info[16:]))
	if count == 0 || count > 1024 {
		return fmt.Errorf("ETHTOOL_GSSET_INFO: %d features", count)
	}
	// Their names, to find the bit of each.
	strs := make([]byte, 12+count*ethGStringLen)
	ne.PutUint32(strs[0:], ethtoolGStrings)
	ne.PutUint32(strs[4:], ethSSFeatures)
	ne.PutUint32(strs[8:], uint32(count))
	if err := ethtool(fd, ifname, strs); err != nil {
		return fmt.Errorf("ETHTOOL_GSTRINGS: %w", err)
	}
	bit := map[string]int{}
	for i := range count {
		s := strs[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		bit[string(bytes.TrimRight(s, "\x00"))] = i
	}
	blocks := (count + 31) / 32
	set := make([]byte, 8+8*blocks) // cmd, size, {valid, requested}[]
	ne.PutUint32(set[0:], ethtoolSFeatures)
	ne.PutUint32(set[4:], uint32(blocks))
	for _, n := range names {
		b, ok := bit[n]
		if !ok {
			return fmt.Errorf("netdev feature %q unknown to this kernel", n)
		}
		at := 8 + 8*(b/32)
		ne.PutUint32(set[at:], ne.Uint32(set[at:])|1<<(b%32))
		if on {
			ne.PutUint32(set[at+4:], ne.Uint32(set[at+4:])|1<<(b%32))
		}
	}
	if err := ethtool(fd, ifname, set); err != nil {
		return fmt.Errorf("ETHTOOL_SFEATURES: %w", err)
	}
	// Read back the active state.
	get := make([]byte, 8+16*blocks) // cmd, size, {available, requested, active, never_changed}[]
	ne.PutUint32(get[0:], ethtoolGFeatures)
	ne.PutUint32(get[4:], uint32(blocks))
	if err := ethtool(fd, ifname, get); err != nil {
		return fmt.Errorf("ETHTOOL_GFEATURES: %w", err)
	}
	for _, n := range names {
		b := bit[n]
		active := ne.Uint32(get[8+16*(b/32)+8:])&(1<<(b%32)) != 0
		if active != on {
			return fmt.Errorf("netdev feature %s still %v on %s", n, active, ifname)
		}
	}
	return nil
}
