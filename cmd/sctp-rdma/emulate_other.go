//go:build !linux

package main

import (
	"context"
	"errors"
	"io"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

type emulated struct{ addr string }

func startEmulated(spec string, so transport.Options, w io.Writer) (*emulated, error) {
	return nil, errors.New("--emulate needs Linux network namespaces")
}

func (e *emulated) run(ctx context.Context, c bench.Config) (*bench.Result, error) {
	return nil, errors.New("--emulate needs Linux")
}

func (e *emulated) close() {}
