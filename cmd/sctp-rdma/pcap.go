package main

import (
	"fmt"
	"io"

	"github.com/sctp-rdma/sctp-rdma/capture"
)

// startCapture opens the --pcap file (path "" does nothing) and returns
// the writer and the function that closes it and reports on stderr what
// it holds.
func startCapture(path string, snapLen int, stderr io.Writer) (*capture.Writer, func(), error) {
	if path == "" {
		return nil, func() {}, nil
	}
	if snapLen < 0 || (snapLen > 0 && snapLen < 64) {
		return nil, nil, usageError("--pcap-snaplen %d: want 0 (whole packets) or at least 64", snapLen)
	}
	w, err := capture.CreateWith(path, capture.Options{SnapLen: snapLen})
	if err != nil {
		return nil, nil, fmt.Errorf("--pcap: %w", err)
	}
	return w, func() {
		err := w.Close()
		st := w.Stats()
		fmt.Fprintf(stderr, "sctp-rdma: %s: %d packets, %d octets captured", path, st.Packets, st.Octets)
		if st.Dropped > 0 {
			fmt.Fprintf(stderr, ", %d not written (the file could not keep up; --pcap-snaplen keeps only headers)", st.Dropped)
		}
		if err != nil {
			fmt.Fprintf(stderr, " (%v)", err)
		}
		fmt.Fprintln(stderr)
	}, nil
}
