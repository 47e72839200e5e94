// Package secure builds the DTLS (SCTP over DTLS, RFC 8261, for
// sctp-native) and TLS (MPA over TLS, for mpa) configurations of the CLI
// from files: a certificate and its key in PEM, a CA bundle to verify the
// peer, or a pre-shared key (DTLS only: Go's crypto/tls has no PSK cipher
// suites).
//
// Authentication: a client verifies the server's certificate against CA
// (and the server name against the address it dials); a server given a
// CA requires and verifies a client certificate (mutual authentication).
// With a pre-shared key both ends prove that they hold it.
package secure

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pion/dtls/v3"
)

// Files names the key material.
type Files struct {
	// Cert and Key are PEM files of this end's certificate chain and
	// private key.
	Cert, Key string
	// CA is a PEM bundle of the certificates this end trusts to sign the
	// peer's: a client's roots for the server; for a server, the client
	// certificates it requires (mutual authentication).
	CA string
	// PSK is a file holding a pre-shared key, in hex (at least 16 octets,
	// 32 recommended); PSKIdentity names it (DTLS only).
	PSK, PSKIdentity string
	// ServerName is the name a client verifies in the server's
	// certificate (the host it dials, by default).
	ServerName string
}

// ErrConfig reports key material that cannot be used.
var ErrConfig = errors.New("secure: bad key material")

// Enabled reports whether any file was named.
func (f Files) Enabled() bool { return f.Cert != "" || f.Key != "" || f.CA != "" || f.PSK != "" }

func (f Files) load(server bool) (certs []tls.Certificate, pool *x509.CertPool, psk []byte, err error) {
	if (f.Cert == "") != (f.Key == "") {
		return nil, nil, nil, fmt.Errorf("%w: give both a certificate and its key", ErrConfig)
	}
	if f.Cert != "" {
		c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		certs = []tls.Certificate{c}
	}
	if f.CA != "" {
		b, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, nil, nil, fmt.Errorf("%w: no PEM certificate in %s", ErrConfig, f.CA)
		}
	}
	if f.PSK != "" {
		b, err := os.ReadFile(f.PSK)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		psk, err = hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(psk) < 16 {
			return nil, nil, nil, fmt.Errorf("%w: %s must hold a key of at least 16 octets in hex", ErrConfig, f.PSK)
		}
		return certs, pool, psk, nil
	}
	switch {
	case server && certs == nil:
		return nil, nil, nil, fmt.Errorf("%w: a server needs a certificate and key (or a pre-shared key)", ErrConfig)
	case !server && pool == nil:
		return nil, nil, nil, fmt.Errorf("%w: a client needs a CA to verify the server (or a pre-shared key)", ErrConfig)
	}
	return certs, pool, psk, nil
}

// DTLS returns the DTLS configuration of a server or a client.
func (f Files) DTLS(server bool) (*dtls.Config, error) {
	certs, pool, psk, err := f.load(server)
	if err != nil {
		return nil, err
	}
	c := &dtls.Config{ExtendedMasterSecret: dtls.RequireExtendedMasterSecret}
	if psk != nil {
		id := f.PSKIdentity
		if id == "" {
			id = "sctp-rdma"
		}
		c.PSK = func([]byte) ([]byte, error) { return psk, nil }
		c.PSKIdentityHint = []byte(id)
		c.CipherSuites = []dtls.CipherSuiteID{dtls.TLS_PSK_WITH_AES_128_GCM_SHA256}
		return c, nil
	}
	c.Certificates = certs
	if server {
		if pool != nil {
			c.ClientAuth, c.ClientCAs = dtls.RequireAndVerifyClientCert, pool
		}
	} else {
		c.RootCAs, c.ServerName = pool, f.ServerName
	}
	return c, nil
}

// TLS returns the TLS 1.3 configuration of a server or a client.
func (f Files) TLS(server bool) (*tls.Config, error) {
	if f.PSK != "" {
		return nil, fmt.Errorf("%w: TLS (MPA) takes certificates only: Go's crypto/tls has no pre-shared key suites", ErrConfig)
	}
	certs, pool, _, err := f.load(server)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: certs}
	if server {
		if pool != nil {
			c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, pool
		}
	} else {
		c.RootCAs, c.ServerName = pool, f.ServerName
	}
	return c, nil
}

// writeSelfSigned makes a self-signed certificate for name and writes it
// and its key as PEM files in dir; it returns the two paths.
func writeSelfSigned(dir, name string) (cert, key string, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return "", "", err
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return "", "", err
	}
	cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		return "", "", err
	}
	return cert, key, nil
}

// GenerateSelfSigned writes, in dir, a self-signed certificate and key for
// a server named serverName and one for a client, valid for a day, and
// returns the key material of each with the other's certificate as its
// CA: mutual authentication between the two, for trials and benchmarks
// (not a substitute for a real CA).
func GenerateSelfSigned(dir, serverName string) (server, client Files, err error) {
	sc, sk, err := writeSelfSigned(dir, serverName)
	if err != nil {
		return Files{}, Files{}, err
	}
	cc, ck, err := writeSelfSigned(dir, "client."+serverName)
	if err != nil {
		return Files{}, Files{}, err
	}
	return Files{Cert: sc, Key: sk, CA: cc}, Files{Cert: cc, Key: ck, CA: sc, ServerName: serverName}, nil
}
