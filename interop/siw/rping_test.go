package siw

import (
	"context"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
)

// TestInfo_WireImage: rping's struct rping_rdma_info, big-endian
// (htobe64/htobe32 in rping.c), 16 octets.
func TestInfo_WireImage(t *testing.T) {
	i := Info{Addr: 0x0000_7f3a_5c40_1000, STag: 0x0000_2a01, Size: 64}
	want := []byte{0, 0, 0x7f, 0x3a, 0x5c, 0x40, 0x10, 0, 0, 0, 0x2a, 0x01, 0, 0, 0, 64}
	assert.Equal(t, want, i.Append(nil))
	assert.Equal(t, InfoLen, i.Len())
	got, n, err := ParseInfo(want)
	require.NoError(t, err)
	assert.Equal(t, 16, n)
	assert.Equal(t, i, got)
	for _, l := range []int{0, 15, 17} {
		_, _, err := ParseInfo(make([]byte, l))
		assert.ErrorIs(t, err, ErrInfoLength)
	}
	b := make([]byte, 0, 16)
	assert.Zero(t, testing.AllocsPerRun(100, func() { b = i.Append(b[:0]) }))
}

// TestFillPing: rping's client payload, as siw's rping prints it
// ("ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqr").
func TestFillPing(t *testing.T) {
	b := make([]byte, 64)
	FillPing(b, 0)
	assert.Equal(t, "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr\x00", string(b))
	FillPing(b, 2)
	assert.Equal(t, "rdma-ping-2: CDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrst\x00", string(b))
	FillPing(b, 57)
	assert.Equal(t, byte('z'), b[len("rdma-ping-57: ")])
	assert.Equal(t, byte('A'), b[len("rdma-ping-57: ")+1], "wraps after 'z'")
	FillPing(nil, 1)
}

// TestRping_Loopback runs our client against our server on 127.0.0.1 in
// the modes used against siw.
func TestRping_Loopback(t *testing.T) {
	cases := []struct {
		name     string
		cli, srv mpa.Config
		size     int
	}{
		{"rev2-enhanced-crc", mpa.Config{Enhanced: true, IRD: 1, ORD: 1}, mpa.Config{IRD: 1, ORD: 1}, 64},
		{"rev1-nocrc", mpa.Config{Revision: iwarpwire.MPARev1, NoCRC: true}, mpa.Config{NoCRC: true}, 64},
		{"p2p-read-rtr", mpa.Config{Enhanced: true, IRD: 1, ORD: 1, PeerToPeer: true, RTR: iwarp.RTRRead}, mpa.Config{RTR: iwarp.RTRRead, IRD: 1, ORD: 1}, 100},
		{"p2p-send-rtr-64KiB", mpa.Config{Enhanced: true, IRD: 1, ORD: 1, PeerToPeer: true, RTR: iwarp.RTRSend}, mpa.Config{RTR: iwarp.RTRSend, IRD: 1, ORD: 1}, 65536},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ln, err := mpa.Listen("tcp", "127.0.0.1:0", &tc.srv)
			require.NoError(t, err)
			defer ln.Close()
			type result struct {
				st  Stats
				err error
			}
			res := make(chan result, 1)
			go func() {
				st, err := Serve(ctx, ln, Config{Size: tc.size})
				res <- result{st, err}
			}()
			st, err := Client(ctx, ln.Addr().String(), Config{MPA: tc.cli, Size: tc.size, Count: 7})
			if err != nil {
				r := <-res
				t.Fatalf("client: %v; server: %v", err, r.err)
			}
			assert.Equal(t, 7, st.Iterations)
			r := <-res
			require.NoError(t, r.err)
			assert.Equal(t, 7, r.st.Iterations)
			assert.Equal(t, int64(7*2*tc.size), r.st.Bytes)
		})
	}
}

func FuzzParseInfo(f *testing.F) {
	f.Add(Info{Addr: 1, STag: 2, Size: 3}.Append(nil))
	f.Add([]byte{})
	f.Add(make([]byte, 17))
	f.Fuzz(func(t *testing.T, b []byte) {
		i, n, err := ParseInfo(b)
		if err != nil {
			return
		}
		if n != InfoLen || string(i.Append(nil)) != string(b) {
			t.Fatalf("round trip %x -> %+v", b, i)
		}
	})
}
