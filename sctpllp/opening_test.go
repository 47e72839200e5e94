package sctpllp

import (
	"context"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// backlogFake is a fake transport whose stack queues only backlog new
// incoming streams, as pion does (contract.AcceptBacklogger).
type backlogFake struct {
	*fakeTransport
	backlog int
}

func (b backlogFake) AcceptBacklog() int { return b.backlog }

// openAsync runs Open on sid and sends its outcome on the returned channel.
func openAsync(ctx context.Context, a *Association, sid uint16) <-chan error {
	res := make(chan error, 1)
	go func() {
		_, err := a.Open(ctx, sid, OpenRequest{})
		res <- err
	}()
	return res
}

// A pion peer discards the first DATA chunk of a stream beyond its 16-deep
// accept queue until the sender's T3-rtx timeout (doubling each time): 200
// sessions opened at once over pion took 0.7–3.2 s and now and then more
// than 30 s (TestPion_ManyConcurrentSessions). The adaptation keeps at most
// the backend's accept backlog of Initiates unanswered; the next Open's
// Initiate leaves when a reply ends one of them.
func TestOpen_InitiatesBoundedByAcceptBacklog(t *testing.T) {
	ft := newFake(8)
	a := NewAssociation(backlogFake{ft, 2}, Config{KeepIdle: true})
	defer a.Abort()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var res []<-chan error
	for sid := uint16(1); sid <= 3; sid++ {
		res = append(res, openAsync(ctx, a, sid))
	}
	first, c := ft.nextCtl(t)
	require.Equal(t, funcInitiate, c.Function)
	second, c := ft.nextCtl(t)
	require.Equal(t, funcInitiate, c.Function)
	ft.quiet(t) // the third waits for a reply
	ft.injectCtl(first, ddpchunk.Control{SSN: 0, Function: funcAccept})
	third, c := ft.nextCtl(t)
	require.Equal(t, funcInitiate, c.Function)
	assert.ElementsMatch(t, []uint16{1, 2, 3}, []uint16{first, second, third})
	// A Reject ends an Initiate too.
	ft.injectCtl(second, ddpchunk.Control{SSN: 0, Function: funcReject})
	ft.injectCtl(third, ddpchunk.Control{SSN: 0, Function: funcAccept})
	var accepted, rejected int
	for _, r := range res {
		select {
		case err := <-r:
			var re *RejectError
			switch {
			case err == nil:
				accepted++
			case assert.ErrorAs(t, err, &re):
				rejected++
			}
		case <-time.After(5 * time.Second):
			t.Fatal("an Open did not return")
		}
	}
	assert.Equal(t, 2, accepted)
	assert.Equal(t, 1, rejected)
}

// An Open waiting for room returns when its context ends or the
// association ends, with that cause, and sends nothing.
func TestOpen_WaitingForRoomEndsWithContextOrAssociation(t *testing.T) {
	ft := newFake(8)
	a := NewAssociation(backlogFake{ft, 1}, Config{KeepIdle: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	held := openAsync(ctx, a, 1)
	_, c := ft.nextCtl(t)
	require.Equal(t, funcInitiate, c.Function)

	short, cancelShort := context.WithCancel(context.Background())
	waiting := openAsync(short, a, 2)
	ft.quiet(t)
	cancelShort()
	select {
	case err := <-waiting:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting Open ignored its context")
	}
	ft.quiet(t)

	waiting = openAsync(ctx, a, 3)
	ft.quiet(t)
	require.NoError(t, a.Abort())
	for _, r := range []<-chan error{waiting, held} {
		select {
		case err := <-r:
			require.Error(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("an Open outlived the association")
		}
	}
}

// Config.MaxOpening overrides the backend: negative, no bound; positive,
// that bound on any backend (a native client facing a pion peer).
func TestOpen_MaxOpeningOverridesBackend(t *testing.T) {
	for _, c := range []struct {
		name    string
		t       func(*fakeTransport) backend.Transport
		max     int
		initial int
	}{
		{"pion-like, no bound", func(f *fakeTransport) backend.Transport { return backlogFake{f, 1} }, -1, 4},
		{"plain, bound 2", func(f *fakeTransport) backend.Transport { return f }, 2, 2},
		{"plain, default: no bound", func(f *fakeTransport) backend.Transport { return f }, 0, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			ft := newFake(8)
			a := NewAssociation(c.t(ft), Config{KeepIdle: true, MaxOpening: c.max})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for sid := uint16(1); sid <= 4; sid++ {
				wg.Add(1)
				r := openAsync(ctx, a, sid)
				go func() { defer wg.Done(); <-r }()
			}
			for range c.initial {
				_, m := ft.nextCtl(t)
				require.Equal(t, funcInitiate, m.Function)
			}
			ft.quiet(t)
			require.NoError(t, a.Abort())
			wg.Wait()
		})
	}
}
