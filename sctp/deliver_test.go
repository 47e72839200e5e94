package sctp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Close and Abort wait for a call of the receive callback in progress:
// once they return, the callback is not running and is not called again
// (the contract of sctpllp's backend.Transport), even while the peer
// keeps sending.
func TestDelivery_CloseAndAbortWaitForTheCallback(t *testing.T) {
	for _, abort := range []bool{false, true} {
		cli, srv := connected(t, nil)
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		var calls, afterReturn int
		returned := make(chan struct{})
		srv.Start(func(uint16, uint32, []byte) {
			calls++
			select {
			case <-returned:
				afterReturn++
			default:
			}
			if calls == 1 {
				entered <- struct{}{}
				<-release // a slow callback
			}
		}, func(error) {})
		cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
		stop := make(chan struct{})
		flooded := make(chan struct{})
		go func() { // the peer keeps sending
			defer close(flooded)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if cli.WriteMsg(1, 16, []byte("flood")) != nil {
					return
				}
			}
		}()
		<-entered
		closed := make(chan error, 1)
		go func() {
			if abort {
				closed <- srv.Abort()
			} else {
				closed <- srv.Close()
			}
		}()
		select {
		case <-closed:
			t.Fatalf("abort %t: returned while the callback was running", abort)
		case <-time.After(100 * time.Millisecond):
		}
		close(release)
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("abort %t: did not return after the callback did", abort)
		}
		close(returned)
		time.Sleep(100 * time.Millisecond)
		close(stop)
		<-flooded
		// Read after the delivery goroutine's last call (the quiesce
		// ordered it): no call started after Close or Abort returned.
		srv.dq.cbMu.Lock()
		assert.Zero(t, afterReturn, "abort %t: callback called after return", abort)
		srv.dq.cbMu.Unlock()
	}
}

// Close or Abort called from the receive callback itself does not wait
// for its own call.
func TestDelivery_CloseOrAbortFromTheCallback(t *testing.T) {
	for _, abort := range []bool{false, true} {
		cli, srv := connected(t, nil)
		done := make(chan error, 1)
		res := make(chan error, 1)
		srv.Start(func(uint16, uint32, []byte) {
			if abort {
				res <- srv.Abort()
			} else {
				res <- srv.Close()
			}
		}, func(err error) { done <- err })
		cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
		require.NoError(t, cli.WriteMsg(0, 16, []byte("x")))
		select {
		case <-res:
		case <-time.After(10 * time.Second):
			t.Fatalf("abort %t: Close/Abort from the callback hung", abort)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("abort %t: done not called", abort)
		}
	}
}
