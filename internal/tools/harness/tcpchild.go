package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// TCPChildModes are the hidden sub-modes of `sctp-rdma harness` that the
// veth benchmark runs as the raw TCP and raw sctp-native processes (see
// TCPChild, SCTPChild).
var TCPChildModes = map[string]bool{"tcp-sink": true, "tcp-source": true, "sctp-sink": true, "sctp-source": true}

// TCPChild runs one raw TCP side of the veth benchmark as its own
// process: "tcp-sink ADDR" listens, prints {"event":"listening","addr"},
// reads one connection to its end and prints the octets and the time
// from the first octet to the end; "tcp-source ADDR DURATION SIZE" writes
// SIZE-octet blocks to ADDR for DURATION and closes.
func TCPChild(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 && (args[0] == "sctp-sink" || args[0] == "sctp-source") {
		return SCTPChild(ctx, args, stdout)
	}
	if len(args) < 2 {
		return errors.New("harness tcp-sink ADDR | tcp-source ADDR DURATION SIZE")
	}
	enc := json.NewEncoder(stdout)
	switch args[0] {
	case "tcp-sink":
		ln, err := net.Listen("tcp", args[1])
		if err != nil {
			return err
		}
		defer ln.Close()
		stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
		defer stop()
		_ = enc.Encode(map[string]any{"event": "listening", "addr": ln.Addr().String()})
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		var n int64
		var first time.Time
		for {
			k, err := c.Read(buf)
			if k > 0 && n == 0 {
				first = time.Now()
			}
			n += int64(k)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
		}
		el := time.Since(first).Seconds()
		if n == 0 {
			el = 0
		}
		return enc.Encode(map[string]any{"event": "result", "bytes": n, "elapsed_s": el})
	case "tcp-source":
		d, size, err := sourceArgs(args)
		if err != nil {
			return err
		}
		c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", args[1])
		if err != nil {
			return err
		}
		buf := make([]byte, size)
		var n int64
		end := time.Now().Add(d)
		for time.Now().Before(end) && ctx.Err() == nil {
			k, err := c.Write(buf)
			n += int64(k)
			if err != nil {
				_ = c.Close()
				return err
			}
		}
		if err := c.Close(); err != nil {
			return err
		}
		return enc.Encode(map[string]any{"event": "result", "bytes": n})
	}
	return fmt.Errorf("harness: no sub-mode %q", args[0])
}

// sourceArgs parses "MODE ADDR DURATION SIZE" of a source sub-mode.
func sourceArgs(args []string) (d time.Duration, size int, err error) {
	if len(args) != 4 {
		return 0, 0, fmt.Errorf("harness %s ADDR DURATION SIZE", args[0])
	}
	d, err = time.ParseDuration(args[2])
	if err != nil || d <= 0 {
		return 0, 0, fmt.Errorf("%s: duration %q", args[0], args[2])
	}
	if _, err := fmt.Sscan(args[3], &size); err != nil || size < 1 || size > 16<<20 {
		return 0, 0, fmt.Errorf("%s: size %q", args[0], args[3])
	}
	return d, size, nil
}
