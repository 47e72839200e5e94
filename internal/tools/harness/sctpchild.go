package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/sctp"
)

// SCTPChild runs one raw sctp-native side of the veth benchmark as its own
// process, as TCPChild does for TCP: "sctp-sink ADDR" listens, prints
// {"event":"listening","addr"}, takes one association, copies each
// message into memory of its own (as an application must) and prints the
// octets and the time from the first message to the association's end;
// "sctp-source ADDR DURATION SIZE" writes SIZE-octet messages with
// sctp.WriteMsg (the stack fragments them, RFC 9260 §6.9) for DURATION,
// then closes gracefully.
func SCTPChild(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) < 2 {
		return errors.New("harness sctp-sink ADDR | sctp-source ADDR DURATION SIZE")
	}
	enc := json.NewEncoder(stdout)
	switch args[0] {
	case "sctp-sink":
		l, err := sctp.Listen("udp", args[1], nil)
		if err != nil {
			return err
		}
		defer l.Close()
		_ = enc.Encode(map[string]any{"event": "listening", "addr": l.Addr().String()})
		a, err := l.Accept(ctx)
		if err != nil {
			return err
		}
		var n atomic.Int64
		var first atomic.Int64 // UnixNano of the first message
		sink := make([]byte, 1<<20)
		ended := make(chan error, 1)
		a.Start(func(_ uint16, _ uint32, b []byte) {
			if n.Load() == 0 {
				first.Store(time.Now().UnixNano())
			}
			copy(sink, b)
			n.Add(int64(len(b)))
		}, func(err error) { ended <- err })
		select {
		case err = <-ended:
		case <-ctx.Done():
			_ = a.Abort()
			return ctx.Err()
		}
		if err != nil {
			return err
		}
		el := 0.0
		if n.Load() > 0 {
			el = time.Since(time.Unix(0, first.Load())).Seconds()
		}
		return enc.Encode(map[string]any{"event": "result", "bytes": n.Load(), "elapsed_s": el})
	case "sctp-source":
		d, size, err := sourceArgs(args)
		if err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		a, err := sctp.Dial(dctx, "udp", args[1], nil)
		cancel()
		if err != nil {
			return err
		}
		a.Start(func(uint16, uint32, []byte) {}, func(error) {})
		buf := make([]byte, size)
		var n int64
		end := time.Now().Add(d)
		for time.Now().Before(end) && ctx.Err() == nil {
			if err := a.WriteMsg(1, 0, buf); err != nil {
				_ = a.Abort()
				return err
			}
			n += int64(size)
		}
		if err := a.Close(); err != nil {
			return err
		}
		return enc.Encode(map[string]any{"event": "result", "bytes": n})
	}
	return fmt.Errorf("harness: no sub-mode %q", args[0])
}
