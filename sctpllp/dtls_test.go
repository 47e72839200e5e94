package sctpllp_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/transporttest"
)

// testCert is a self-signed ECDSA certificate for name, and a pool that
// trusts it.
func testCert(t testing.TB, name string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// dtlsPair returns server and client DTLS configurations with mutual
// certificate authentication.
func dtlsPair(t testing.TB) (server, client *dtls.Config) {
	sc, spool := testCert(t, "server.test")
	cc, cpool := testCert(t, "client.test")
	server = &dtls.Config{Certificates: []tls.Certificate{sc}, ClientAuth: dtls.RequireAndVerifyClientCert, ClientCAs: cpool,
		ExtendedMasterSecret: dtls.RequireExtendedMasterSecret}
	client = &dtls.Config{Certificates: []tls.Certificate{cc}, RootCAs: spool, ServerName: "server.test",
		ExtendedMasterSecret: dtls.RequireExtendedMasterSecret}
	return server, client
}

// TestNativeDTLSTransportConformance runs the Transport contract suite over
// the native stack inside DTLS (RFC 8261), with mutual certificate
// authentication.
func TestNativeDTLSTransportConformance(t *testing.T) {
	scfg, ccfg := dtlsPair(t)
	transporttest.Run(t, func(t *testing.T) (sctpllp.Transport, sctpllp.Transport) {
		ln, err := sctpllp.ListenNativeDTLS("127.0.0.1:0", sctpllp.NativeConfig{}, scfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() })
		return establish(t, ln.Addr().String(), func(ctx context.Context) (sctpllp.Transport, error) { return ln.Accept(ctx) },
			func(ctx context.Context, addr string) (sctpllp.Transport, error) {
				return sctpllp.DialNativeDTLS(ctx, addr, sctpllp.NativeConfig{}, ccfg)
			})
	})
}

// TestNativeDTLS_PSK: a pre-shared key works in place of certificates, and
// a wrong key gets no association.
func TestNativeDTLS_PSK(t *testing.T) {
	psk := func(key string) *dtls.Config {
		return &dtls.Config{PSK: func([]byte) ([]byte, error) { return []byte(key), nil }, PSKIdentityHint: []byte("sctp-rdma"),
			CipherSuites: []dtls.CipherSuiteID{dtls.TLS_PSK_WITH_AES_128_GCM_SHA256}}
	}
	ln, err := sctpllp.ListenNativeDTLS("127.0.0.1:0", sctpllp.NativeConfig{}, psk("a shared secret of 32 octets....."))
	require.NoError(t, err)
	defer ln.Close()
	cl, sv := establish(t, ln.Addr().String(), func(ctx context.Context) (sctpllp.Transport, error) { return ln.Accept(ctx) },
		func(ctx context.Context, addr string) (sctpllp.Transport, error) {
			return sctpllp.DialNativeDTLS(ctx, addr, sctpllp.NativeConfig{}, psk("a shared secret of 32 octets....."))
		})
	got := make(chan []byte, 1)
	sv.Start(func(_ uint16, _ uint32, b []byte) { got <- append([]byte(nil), b...) }, func(error) {})
	cl.Start(func(uint16, uint32, []byte) {}, func(error) {})
	require.NoError(t, cl.WriteMsg(1, sctpllp.PPIDSegment, []byte("under a pre-shared key")))
	assert.Equal(t, "under a pre-shared key", string(<-got))
	_ = cl.Abort()
	_ = sv.Abort()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = sctpllp.DialNativeDTLS(ctx, ln.Addr().String(), sctpllp.NativeConfig{}, psk("another key"))
	require.ErrorIs(t, err, sctpllp.ErrDTLSHandshake)
	actx, acancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer acancel()
	_, err = ln.Accept(actx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "no association under a wrong key")
}

// TestNativeDTLS_ClientNotTrusted: with mutual authentication, a client
// whose certificate the server does not trust gets no association (and
// the server gives it no memory beyond the handshake).
func TestNativeDTLS_ClientNotTrusted(t *testing.T) {
	scfg, ccfg := dtlsPair(t)
	other, _ := testCert(t, "client.test")
	ccfg.Certificates = []tls.Certificate{other}
	ln, err := sctpllp.ListenNativeDTLS("127.0.0.1:0", sctpllp.NativeConfig{}, scfg)
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = sctpllp.DialNativeDTLS(ctx, ln.Addr().String(), sctpllp.NativeConfig{}, ccfg)
	require.Error(t, err)
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
	plain, err := sctpllp.ListenNative("127.0.0.1:0", sctpllp.NativeConfig{})
	require.NoError(t, err)
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = sctpllp.DialNativeDTLS(ctx, plain.Addr().String(), sctpllp.NativeConfig{}, ccfg)
	require.ErrorIs(t, err, sctpllp.ErrDTLSHandshake)
	assert.Contains(t, err.Error(), "does it run SCTP over DTLS")
	assert.Positive(t, plain.HandshakeStats().BadPackets, "the DTLS ClientHello is counted as a bad packet")

	secure, err := sctpllp.ListenNativeDTLS("127.0.0.1:0", sctpllp.NativeConfig{}, scfg)
	require.NoError(t, err)
	defer secure.Close()
	dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer dcancel()
	_, err = sctpllp.DialNative(dctx, secure.Addr().String(), sctpllp.NativeConfig{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.Zero(t, secure.HandshakeStats().CookiesOK)
	_ = net.ErrClosed
}
