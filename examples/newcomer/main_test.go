package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/workload"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNewcomerProgram runs the program over each userspace LLP: every
// operation on each of four streams gives what the README says it does.
func TestNewcomerProgram(t *testing.T) {
	for _, llp := range []string{transport.SCTPNative, transport.SCTPPion, transport.MPA} {
		t.Run(llp, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out bytes.Buffer
			require.NoError(t, run(ctx, llp, 4, &out))
			var want []string
			for i := range 4 {
				want = append(want, fmt.Sprintf("stream %d: read \"hello from stream %d\", fetchadd 0 then 5, imm 15: after the write", i, i))
			}
			assert.Equal(t, strings.Join(want, "\n")+"\n", out.String())
		})
	}
}

// TestAdvertIsTheRegionFormat: the program writes its answer to "where?"
// by hand, as a newcomer would, in the module's one format
// (workload.Region), which the README's snippet reads.
func TestAdvertIsTheRegionFormat(t *testing.T) {
	pd := new(rdmap.Device).AllocPD()
	mr, err := pd.Register(make([]byte, 4096), rdmap.RemoteWrite)
	require.NoError(t, err)
	want := workload.Region{STag: mr.STag(), TO: mr.BaseTO(), Length: 4096}
	assert.Equal(t, want.Append(nil), advert(mr))
	stag, to, size, err := parseAdvert(want.Append(nil))
	require.NoError(t, err)
	assert.Equal(t, want, workload.Region{STag: stag, TO: to, Length: size})
	assert.Equal(t, workload.RegionLen, advertLen)
}
