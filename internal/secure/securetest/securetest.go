// Package securetest makes throw-away certificates for the tests of the
// secure modes (secure.GenerateSelfSigned in t.TempDir()).
package securetest

import (
	"crypto/tls"

	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/pion/dtls/v3"

	"github.com/sctp-rdma/sctp-rdma/internal/secure"
)

// ServerName is the name in the server's certificate.
const ServerName = "sctp-rdma.test"

// Mutual returns the key material of a server and a client that
// authenticate each other with certificates, in t.TempDir().
func Mutual(t testing.TB) (server, client secure.Files) {
	t.Helper()
	server, client, err := secure.GenerateSelfSigned(t.TempDir(), ServerName)
	if err != nil {
		t.Fatal(err)
	}
	return server, client
}

// Stranger returns a client's key material with a certificate nobody
// trusts, verifying the server of Mutual.
func Stranger(t testing.TB, server secure.Files) secure.Files {
	t.Helper()
	_, other, err := secure.GenerateSelfSigned(t.TempDir(), ServerName)
	if err != nil {
		t.Fatal(err)
	}
	other.CA = server.Cert
	return other
}

// PSK writes a pre-shared key (hex) to a file and returns key material
// naming it.
func PSK(t testing.TB, key []byte) secure.Files {
	t.Helper()
	p := filepath.Join(t.TempDir(), "psk.hex")
	if err := os.WriteFile(p, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return secure.Files{PSK: p}
}

// Configs returns the DTLS and TLS configurations of a server and a client
// that authenticate each other (Mutual).
func Configs(t testing.TB) (serverDTLS, clientDTLS *dtls.Config, serverTLS, clientTLS *tls.Config) {
	t.Helper()
	sf, cf := Mutual(t)
	var err error
	must := func() {
		if err != nil {
			t.Fatal(err)
		}
	}
	serverDTLS, err = sf.DTLS(true)
	must()
	clientDTLS, err = cf.DTLS(false)
	must()
	serverTLS, err = sf.TLS(true)
	must()
	clientTLS, err = cf.TLS(false)
	must()
	return serverDTLS, clientDTLS, serverTLS, clientTLS
}
