package sctp

import "sync"

// Buffer classes of the data path. A DATA chunk the sender holds until it
// is acknowledged lives in one pooled buffer with room before it for the
// common header, so that a packet of one chunk goes out from that buffer
// without another copy; received datagrams are read into the large class.
const (
	tinyBuf  = 256
	smallBuf = 2048
	largeBuf = 1<<16 + 256
)

var (
	tinyPool  = sync.Pool{New: func() any { b := make([]byte, tinyBuf); return &b }}
	smallPool = sync.Pool{New: func() any { b := make([]byte, smallBuf); return &b }}
	largePool = sync.Pool{New: func() any { b := make([]byte, largeBuf); return &b }}
)

// getBuf returns a pooled buffer of at least n octets (at most largeBuf),
// its length its capacity.
func getBuf(n int) *[]byte {
	var bp *[]byte
	switch {
	case n <= tinyBuf:
		bp = tinyPool.Get().(*[]byte)
	case n <= smallBuf:
		bp = smallPool.Get().(*[]byte)
	default:
		bp = largePool.Get().(*[]byte)
	}
	*bp = (*bp)[:cap(*bp)]
	return bp
}

// putBuf returns a buffer from getBuf to its pool.
func putBuf(bp *[]byte) {
	if bp == nil {
		return
	}
	switch cap(*bp) {
	case tinyBuf:
		tinyPool.Put(bp)
	case smallBuf:
		smallPool.Put(bp)
	case largeBuf:
		largePool.Put(bp)
	}
}
