package main

import (
	"fmt"
	"io"
	"os"

	"github.com/sctp-rdma/sctp-rdma/trace"
)

// startTrace opens the --trace file (path "" does nothing) and returns the
// writer and the function that closes it and says on stderr what it holds.
func startTrace(path string, stderr io.Writer) (*trace.Writer, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--trace: %w", err)
	}
	w := trace.New(f)
	return w, func() {
		err := w.Close()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fmt.Fprintf(stderr, "sctp-rdma: --trace %s: %v\n", path, err)
			return
		}
		fmt.Fprintf(stderr, "sctp-rdma: %s: protocol trace written (JSON lines, docs/trace.md)\n", path)
	}, nil
}
