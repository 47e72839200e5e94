package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/secure/securetest"
)

// TestSecureModes: serve and bench with --secure over sctp-native (SCTP
// over DTLS) and mpa (MPA over TLS 1.3), mutual authentication from PEM
// files; a plain client, a client that does not trust the server, and a
// server that does not trust the client all fail with one clear line
// within the connection time limit.
func TestSecureModes(t *testing.T) {
	sf, cf := securetest.Mutual(t)
	stranger := securetest.Stranger(t, sf)
	for _, llp := range []string{"sctp-native", "mpa"} {
		t.Run(llp, func(t *testing.T) {
			addr, stop := serve(t, "--llp", llp, "--cert", sf.Cert, "--key", sf.Key, "--ca", sf.CA)
			defer stop()
			code, out, errOut := runCLI("bench", "--llp", llp, "--connect", addr, "--cert", cf.Cert, "--key", cf.Key,
				"--ca", cf.CA, "--server-name", securetest.ServerName, "--iters", "50", "--size", "4K", "write", "read", "send")
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, "RDMA Write")

			start := time.Now()
			code, _, errOut = runCLI("bench", "--llp", llp, "--connect", addr, "--timeout", "2s", "--iters", "5", "write")
			assert.NotEqual(t, 0, code, "a plain client of a secure server")
			assert.Less(t, time.Since(start), 10*time.Second)
			assert.NotEmpty(t, errOut)

			code, _, errOut = runCLI("bench", "--llp", llp, "--connect", addr, "--cert", stranger.Cert, "--key", stranger.Key,
				"--ca", stranger.CA, "--server-name", securetest.ServerName, "--timeout", "3s", "--iters", "5", "write")
			assert.NotEqual(t, 0, code, "a client the server does not trust")
			assert.Contains(t, errOut, "handshake")
		})
	}
	code, _, errOut := runCLI("bench", "--llp", "sctp-pion", "--connect", "x", "--secure", "--ca", cf.CA)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--secure needs --llp sctp-native")
	code, _, errOut = runCLI("bench", "--llp", "mpa", "--connect", "x", "--psk", sf.Cert)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "certificates only")
}
