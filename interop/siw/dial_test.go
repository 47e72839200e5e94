package siw

import (
	"context"
	"encoding/binary"
	"errors"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"hash/crc32"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
)

// TestDialMPA_TermOnFailedNegotiation_RFC6581_9: dialMPA, the SO_REUSEADDR
// twin of mpa.Dial used against siw, answers an accepting Reply it cannot
// honour as RFC 6581 requires: a Terminate FPDU with layer 2, error type 0
// and code 6 when the Responder ORD exceeds this end's IRD (§9.1), code 7
// when no RTR option matches (§9.2); then it closes the socket (the
// Responder reads EOF and a later write draws a reset) and returns an
// error naming the cause. No host VM is needed: the Responder is a
// scripted TCP peer.
func TestDialMPA_TermOnFailedNegotiation_RFC6581_9(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   mpa.Config
		reply iwarp.IRDORD
		code  byte
		cause error
	}{
		{"9.1 ORD above IRD", mpa.Config{Enhanced: true, IRD: 1, ORD: 1}, iwarp.IRDORD{IRD: 1, ORD: 2}, iwarp.Term.InsufficientIRD.Code, iwarp.ErrInsufficientIRD},
		{"9.2 no matching RTR", mpa.Config{Enhanced: true, PeerToPeer: true, RTR: iwarp.RTRWrite, IRD: 1, ORD: 1},
			iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRRead, IRD: 1, ORD: 1}, iwarp.Term.NoMatchingRTR.Code, iwarp.ErrNoMatchingRTR},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			dialed := make(chan struct{})
			type saw struct {
				rest   []byte
				err    error
				closed bool
			}
			seen := make(chan saw, 1)
			go func() {
				var s saw
				defer func() { seen <- s }()
				defer ln.Close()
				nc, err := ln.Accept()
				if s.err = err; err != nil {
					return
				}
				defer nc.Close()
				_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
				hdr := make([]byte, iwarpwire.MPAFrameHeaderLen)
				if _, s.err = io.ReadFull(nc, hdr); s.err != nil {
					return
				}
				n, err := mpa.FrameLen(hdr)
				if s.err = err; err != nil {
					return
				}
				if _, s.err = io.ReadFull(nc, make([]byte, n-len(hdr))); s.err != nil {
					return
				}
				reply := mpa.Frame{Reply: true, CRC: true, Rev: iwarpwire.MPARev2, Enhanced: true, IRDORD: tc.reply}
				if _, s.err = nc.Write(reply.Append(nil)); s.err != nil {
					return
				}
				if s.rest, s.err = io.ReadAll(nc); s.err != nil {
					return
				}
				_ = nc.(*net.TCPConn).CloseWrite()
				<-dialed
				for range 50 {
					_, err := nc.Write([]byte{0})
					if err == nil {
						_ = nc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
						_, err = nc.Read(make([]byte, 1))
					}
					if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
						s.closed = true
						return
					}
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := dialMPA(ctx, ln.Addr().String(), &tc.cfg)
			close(dialed)
			s := <-seen

			want := []byte{
				0x00, 0x16, // ULPDU_Length 22
				0x41, 0x47, 0, 0, 0, 0, // DDP T=0 L=1 DV=1; RDMAP RV=1 opcode 0x7 Terminate
				0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, // QN 2, MSN 1, MO 0
				0x20, tc.code, 0, 0, // layer 2 | error type 0, error code, HdrCt 0
			}
			want = binary.LittleEndian.AppendUint32(want, crc32.Checksum(want, crc32.MakeTable(crc32.Castagnoli)))
			assert.NoError(t, s.err, "the Initiator's FIN")
			assert.Equal(t, want, s.rest, "exactly one Terminate FPDU")
			assert.True(t, s.closed, "the Initiator's socket is closed")
			assert.Nil(t, c)
			require.ErrorIs(t, err, tc.cause)
		})
	}
}
