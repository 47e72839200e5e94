//go:build !linux

package main

import (
	"context"
	"errors"
	"io"

	"github.com/sctp-rdma/sctp-rdma/bench"
)

type emulated struct{ addr string }

func startEmulated(spec, llp string, w io.Writer) (*emulated, error) {
	return nil, errors.New("--emulate needs Linux network namespaces")
}

func (e *emulated) run(ctx context.Context, c bench.Config) (*bench.Result, error) {
	return nil, errors.New("--emulate needs Linux")
}

func (e *emulated) close() {}
