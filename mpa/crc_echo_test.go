package mpa

import (
	"context"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResponderEchoesC_RFC5044_7_1_1: C in either frame puts CRCs in use;
// a Responder preferring no CRC still answers a Request with C=1 with C=1
// (Linux siw with mpa_crc_required rejects a Reply without it), and one
// with C=0 with C=0.
func TestResponderEchoesC_RFC5044_7_1_1(t *testing.T) {
	for _, reqC := range []bool{true, false} {
		a, b := net.Pipe()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		type res struct {
			c   *Conn
			err error
		}
		done := make(chan res, 1)
		go func() {
			c, err := Server(ctx, b, &Config{NoCRC: true, IRD: 1, ORD: 1})
			done <- res{c, err}
		}()
		req := Frame{CRC: reqC, Rev: iwarpwire.MPARev2, Enhanced: true, IRDORD: iwarp.IRDORD{IRD: 1, ORD: 1}}
		_, err := a.Write(req.Append(nil))
		require.NoError(t, err)
		hdr := make([]byte, iwarpwire.MPAFrameHeaderLen)
		_, err = io.ReadFull(a, hdr)
		require.NoError(t, err)
		n, err := FrameLen(hdr)
		require.NoError(t, err)
		rest := make([]byte, n-iwarpwire.MPAFrameHeaderLen)
		_, err = io.ReadFull(a, rest)
		require.NoError(t, err)
		rep, _, err := ParseFrame(append(hdr, rest...))
		require.NoError(t, err)
		assert.Equal(t, reqC, rep.CRC, "request C=%v", reqC)
		r := <-done
		require.NoError(t, r.err)
		assert.Equal(t, reqC, r.c.Params().CRC)
		_ = a.Close()
		_ = r.c.Abort() // never started: Done would never close
		cancel()
	}
}
