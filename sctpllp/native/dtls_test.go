package native

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/secure/securetest"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/transporttest"
)

// dtlsPair returns server and client DTLS configurations with mutual
// certificate authentication.
func dtlsPair(t testing.TB) (server, client *dtls.Config) {
	server, client, _, _ = securetest.Configs(t)
	return server, client
}

// TestNativeDTLSTransportConformance runs the Transport contract suite over
// the native stack inside DTLS (RFC 8261), with mutual certificate
// authentication.
func TestNativeDTLSTransportConformance(t *testing.T) {
	scfg, ccfg := dtlsPair(t)
	transporttest.Run(t, func(t *testing.T) (backend.Transport, backend.Transport) {
		ln, err := listenDTLS("127.0.0.1:0", Config{}, scfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() })
		return establish(t, ln.Addr().String(), func(ctx context.Context) (backend.Transport, error) { return ln.Accept(ctx) },
			func(ctx context.Context, addr string) (backend.Transport, error) {
				return dialDTLS(ctx, addr, Config{}, ccfg)
			})
	})
}

// TestNativeDTLS_ZeroChecksum_RFC9653_5_4: inside DTLS both ends announce
// Zero Checksum Acceptable for SCTP over DTLS, so each sends its packets
// with a zero checksum (the records' AEAD checks them), and messages of
// one packet and of many arrive.
func TestNativeDTLS_ZeroChecksum_RFC9653_5_4(t *testing.T) {
	scfg, ccfg := dtlsPair(t)
	ln, err := listenDTLS("127.0.0.1:0", Config{}, scfg)
	require.NoError(t, err)
	defer ln.Close()
	cl, sv := establish(t, ln.Addr().String(), func(ctx context.Context) (backend.Transport, error) { return ln.Accept(ctx) },
		func(ctx context.Context, addr string) (backend.Transport, error) {
			return dialDTLS(ctx, addr, Config{}, ccfg)
		})
	defer func() { _ = cl.Abort(); _ = sv.Abort() }()
	for _, tr := range []backend.Transport{cl, sv} {
		assert.True(t, tr.(*transport).a.Stats().ZeroChecksum, "zero checksums inside DTLS")
	}
	got := make(chan []byte, 2)
	sv.Start(func(_ uint16, _ uint32, b []byte) { got <- append([]byte(nil), b...) }, func(error) {})
	cl.Start(func(uint16, uint32, []byte) {}, func(error) {})
	long := make([]byte, 64<<10)
	for i := range long {
		long[i] = byte(i * 7)
	}
	for _, m := range [][]byte{[]byte("one packet"), long} {
		require.NoError(t, cl.WriteMsg(1, backend.PPIDSegment, m))
		select {
		case b := <-got:
			require.Equal(t, m, b)
		case <-time.After(10 * time.Second):
			t.Fatal("the message did not arrive")
		}
	}
}

// TestNativeDTLS_PSK: a pre-shared key works in place of certificates, and
// a wrong key gets no association.
func TestNativeDTLS_PSK(t *testing.T) {
	psk := func(key string) *dtls.Config {
		c, err := securetest.PSK(t, []byte(key)).DTLS(false)
		require.NoError(t, err)
		return c
	}
	ln, err := listenDTLS("127.0.0.1:0", Config{}, psk("a shared secret of 32 octets....."))
	require.NoError(t, err)
	defer ln.Close()
	cl, sv := establish(t, ln.Addr().String(), func(ctx context.Context) (backend.Transport, error) { return ln.Accept(ctx) },
		func(ctx context.Context, addr string) (backend.Transport, error) {
			return dialDTLS(ctx, addr, Config{}, psk("a shared secret of 32 octets....."))
		})
	got := make(chan []byte, 1)
	sv.Start(func(_ uint16, _ uint32, b []byte) { got <- append([]byte(nil), b...) }, func(error) {})
	cl.Start(func(uint16, uint32, []byte) {}, func(error) {})
	require.NoError(t, cl.WriteMsg(1, backend.PPIDSegment, []byte("under a pre-shared key")))
	assert.Equal(t, "under a pre-shared key", string(<-got))
	_ = cl.Abort()
	_ = sv.Abort()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = dialDTLS(ctx, ln.Addr().String(), Config{}, psk("another key, also 32 octets...."))
	require.ErrorIs(t, err, ErrDTLSHandshake)
	actx, acancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer acancel()
	_, err = ln.Accept(actx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "no association under a wrong key")
}

// TestNativeDTLS_ClientNotTrusted: with mutual authentication, a client
// whose certificate the server does not trust gets no association (and
// the server gives it no memory beyond the handshake).
func TestNativeDTLS_ClientNotTrusted(t *testing.T) {
	sf, _ := securetest.Mutual(t)
	scfg, err := sf.DTLS(true)
	require.NoError(t, err)
	ccfg, err := securetest.Stranger(t, sf).DTLS(false)
	require.NoError(t, err)
	ln, err := listenDTLS("127.0.0.1:0", Config{}, scfg)
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = dialDTLS(ctx, ln.Addr().String(), Config{}, ccfg)
	require.ErrorIs(t, err, ErrDTLSHandshake)
	actx, acancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer acancel()
	_, err = ln.Accept(actx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "no association for an untrusted client")
}

// TestNativeDTLS_Downgrade: one side asks for DTLS, the other not. A DTLS
// client meeting a plain listener fails with ErrDTLSHandshake; a plain
// client meeting a DTLS listener fails its SCTP handshake (its INITs are
// not DTLS records and go unanswered) with ErrHandshake-wrapped timeout
// within its context, and the listener accepts nothing.
func TestNativeDTLS_Downgrade(t *testing.T) {
	scfg, ccfg := dtlsPair(t)
	plain, err := listen("127.0.0.1:0", Config{})
	require.NoError(t, err)
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = dialDTLS(ctx, plain.Addr().String(), Config{}, ccfg)
	require.ErrorIs(t, err, ErrDTLSHandshake)
	assert.Contains(t, err.Error(), "does it run SCTP over DTLS")
	assert.Positive(t, plain.HandshakeStats().BadPackets, "the DTLS ClientHello is counted as a bad packet")

	secure, err := listenDTLS("127.0.0.1:0", Config{}, scfg)
	require.NoError(t, err)
	defer secure.Close()
	dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer dcancel()
	_, err = dial(dctx, secure.Addr().String(), Config{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.Zero(t, secure.HandshakeStats().CookiesOK)
	_ = net.ErrClosed
}

// establish is transporttest.Establish with the dialer given the
// listener's address.
func establish(t *testing.T, addr string, accept func(context.Context) (backend.Transport, error),
	dial func(context.Context, string) (backend.Transport, error)) (backend.Transport, backend.Transport) {
	return transporttest.Establish(t, accept, func(ctx context.Context) (backend.Transport, error) { return dial(ctx, addr) })
}
