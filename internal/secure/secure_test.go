package secure_test

import (
	"crypto/tls"
	"testing"

	"github.com/pion/dtls/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/secure"
	"github.com/sctp-rdma/sctp-rdma/internal/secure/securetest"
)

func TestConfigs(t *testing.T) {
	sf, cf := securetest.Mutual(t)
	sd, err := sf.DTLS(true)
	require.NoError(t, err)
	assert.Equal(t, dtls.RequireAndVerifyClientCert, sd.ClientAuth, "a CA on a server: mutual authentication")
	assert.Len(t, sd.Certificates, 1)
	cd, err := cf.DTLS(false)
	require.NoError(t, err)
	assert.NotNil(t, cd.RootCAs)
	assert.Equal(t, securetest.ServerName, cd.ServerName)
	st, err := sf.TLS(true)
	require.NoError(t, err)
	assert.Equal(t, uint16(tls.VersionTLS13), st.MinVersion)
	assert.Equal(t, tls.RequireAndVerifyClientCert, st.ClientAuth)

	noCA := sf
	noCA.CA = ""
	sd, err = noCA.DTLS(true)
	require.NoError(t, err)
	assert.Equal(t, dtls.NoClientCert, sd.ClientAuth, "no CA: server authentication only")

	psk := securetest.PSK(t, []byte("0123456789abcdef0123456789abcdef"))
	pd, err := psk.DTLS(false)
	require.NoError(t, err)
	require.NotNil(t, pd.PSK)
	key, err := pd.PSK(nil)
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef0123456789abcdef", string(key))
}

func TestConfigErrors(t *testing.T) {
	sf, cf := securetest.Mutual(t)
	for name, tc := range map[string]struct {
		f      secure.Files
		server bool
		tls    bool
	}{
		"cert without key":    {secure.Files{Cert: sf.Cert}, true, false},
		"server without cert": {secure.Files{CA: sf.CA}, true, false},
		"client without CA":   {secure.Files{Cert: cf.Cert, Key: cf.Key}, false, false},
		"missing file":        {secure.Files{Cert: "/nonexistent", Key: "/nonexistent"}, true, false},
		"CA that is no PEM":   {secure.Files{CA: sf.Key}, false, true},
		"short PSK":           {securetest.PSK(t, []byte("short")), false, false},
		"PSK for TLS":         {securetest.PSK(t, []byte("0123456789abcdef")), false, true},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			if tc.tls {
				_, err = tc.f.TLS(tc.server)
			} else {
				_, err = tc.f.DTLS(tc.server)
			}
			assert.ErrorIs(t, err, secure.ErrConfig)
		})
	}
	assert.False(t, secure.Files{}.Enabled())
	assert.True(t, sf.Enabled())
}
