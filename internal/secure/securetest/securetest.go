// Package securetest makes throw-away certificates for the tests of the
// secure modes: a self-signed server and client certificate each, written
// as PEM files, and the secure.Files that make the two trust each other.
package securetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/secure"
)

// ServerName is the name in the server's certificate.
const ServerName = "sctp-rdma.test"

// write makes a self-signed certificate for name and writes it and its key
// as PEM files in dir; it returns the two paths.
func write(t testing.TB, dir, name string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// Mutual returns the key material of a server and a client that
// authenticate each other with certificates, in t.TempDir().
func Mutual(t testing.TB) (server, client secure.Files) {
	t.Helper()
	dir := t.TempDir()
	sc, sk := write(t, dir, ServerName)
	cc, ck := write(t, dir, "client."+ServerName)
	server = secure.Files{Cert: sc, Key: sk, CA: cc}
	client = secure.Files{Cert: cc, Key: ck, CA: sc, ServerName: ServerName}
	return server, client
}

// Stranger returns a client's key material with a certificate nobody
// trusts, verifying the server of Mutual.
func Stranger(t testing.TB, server secure.Files) secure.Files {
	t.Helper()
	cc, ck := write(t, t.TempDir(), "client."+ServerName)
	return secure.Files{Cert: cc, Key: ck, CA: server.Cert, ServerName: ServerName}
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
