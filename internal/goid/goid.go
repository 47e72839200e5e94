// Package goid tells goroutines apart, for the one question a callback
// API must answer: is Close or Abort being called from inside the
// callback (then it must not wait for the callback to return), or from
// another goroutine (then it must)?
package goid

import (
	"bytes"
	"runtime"
	"strconv"
)

// ID returns the calling goroutine's id, from the first line of its stack
// ("goroutine 7 [running]:"). Go keeps ids to itself on purpose; read it
// only on rare calls (about a microsecond each), never per message.
func ID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
