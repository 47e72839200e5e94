package sctp

import "sync"

// Buffer classes of the data path. A DATA chunk the sender holds until it
// is acknowledged lives in one pooled buffer with room before it for the
// common header, so that a packet of one chunk goes out from that buffer
// without another copy; received datagrams are read into the largest
// class, and a received message well below it is copied into the class
// of its size. Each class is a power of two of payload plus 256 octets of
// headroom and padding, so that the memory charged to the send and
// receive windows is at most about twice what the messages hold.
const (
	bufSlack = 256
	largeBuf = 1<<16 + bufSlack
)

var bufClasses = [...]int{256, 2048, 4096 + bufSlack, 8192 + bufSlack, 16384 + bufSlack, 32768 + bufSlack, largeBuf}

// rxClasses are the classes of received user data held for reassembly or
// delivery (getRxBuf): bufClasses with smaller steps below 2 KiB, so that
// a small fragment does not hold (and is not charged) a buffer many times
// its size. 1536 holds the user data of a full packet at Ethernet's MTU
// (1,444 octets over IPv4), charged 1.15 times its octets where 2048 was
// charged 1.5 times, and the receive window offered as much smaller; 9216
// that of a jumbo frame's (MTU 9000: 8,944 octets), charged 1.05 times
// where the 16 KiB class was charged 1.87 times. A window offered while
// dense reads (delivered in place, 1.05 times) came was overrun by the
// copied packets of the sparse ones, and the chunks beyond it dropped.
var rxClasses = [...]int{64, 128, 256, 512, 1024, 1536, 2048, 4096 + bufSlack, 8192 + bufSlack, 9216, 16384 + bufSlack, 32768 + bufSlack, largeBuf}

var bufPools [len(bufClasses)]sync.Pool

// rxPools hold the rxClasses that bufClasses lacks, by capacity.
var rxPools = map[int]*sync.Pool{64: {}, 128: {}, 512: {}, 1024: {}, 1536: {}, 9216: {}}

func init() {
	for i := range bufPools {
		n := bufClasses[i]
		bufPools[i].New = func() any { b := make([]byte, n); return &b }
	}
	for n, p := range rxPools {
		p.New = func() any { b := make([]byte, n); return &b }
	}
}

// rxClass returns the capacity of the buffer getRxBuf(n) returns.
func rxClass(n int) int {
	i := 0
	for i < len(rxClasses)-1 && rxClasses[i] < n {
		i++
	}
	return rxClasses[i]
}

// getRxBuf returns a pooled buffer of rxClass(n) octets (n at most
// largeBuf), its length its capacity.
func getRxBuf(n int) *[]byte {
	c := rxClass(n)
	if p := rxPools[c]; p != nil {
		bp := p.Get().(*[]byte)
		*bp = (*bp)[:cap(*bp)]
		return bp
	}
	return getBuf(c)
}

// bufClass returns the capacity of the buffer getBuf(n) returns.
func bufClass(n int) int {
	i := 0
	for i < len(bufClasses)-1 && bufClasses[i] < n {
		i++
	}
	return bufClasses[i]
}

// getBuf returns a pooled buffer of at least n octets (at most largeBuf),
// its length its capacity.
func getBuf(n int) *[]byte {
	i := 0
	for i < len(bufClasses)-1 && bufClasses[i] < n {
		i++
	}
	bp := bufPools[i].Get().(*[]byte)
	*bp = (*bp)[:cap(*bp)]
	return bp
}

// putBuf returns a buffer from getBuf to its pool.
func putBuf(bp *[]byte) {
	if bp == nil {
		return
	}
	c := cap(*bp)
	for i, n := range bufClasses {
		if n == c {
			bufPools[i].Put(bp)
			return
		}
	}
	if p := rxPools[c]; p != nil {
		p.Put(bp)
	}
}
