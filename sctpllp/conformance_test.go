package sctpllp_test

import (
	"context"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/transporttest"
)

// TestPionTransportConformance runs the Transport contract suite over the
// userspace backend (pion/sctp over UDP) on 127.0.0.1.
func TestPionTransportConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) (sctpllp.Transport, sctpllp.Transport) {
		t.Helper()
		ln, err := sctpllp.ListenPion("127.0.0.1:0", sctpllp.PionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		type res struct {
			tr  *sctpllp.PionTransport
			err error
		}
		acc := make(chan res, 1)
		go func() { tr, err := ln.Accept(ctx); acc <- res{tr, err} }()
		c, err := sctpllp.DialPion(ctx, ln.Addr().String(), sctpllp.PionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		r := <-acc
		if r.err != nil {
			_ = c.Abort()
			t.Fatal(r.err)
		}
		return c, r.tr
	})
}
