package mpa

import (
	"bytes"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func keyReq() []byte { return []byte(requestKey) }
func keyRep() []byte { return []byte(replyKey) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestFrameWire checks hand-built images of RFC 5044 §7.1.1 Figure 8 and
// RFC 6581 §6, among them the frames Linux siw sent in rping-siw.pcap.
func TestFrameWire(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire []byte
		f    Frame
	}{
		{
			name: "siw enhanced Request (pcap)",
			wire: cat([]byte("MPA ID Req Frame"), []byte{0x10, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01}),
			f:    Frame{Enhanced: true, Rev: 2, IRDORD: iwarp.IRDORD{IRD: 1, ORD: 1}},
		},
		{
			name: "siw enhanced Reply (pcap)",
			wire: cat([]byte("MPA ID Rep Frame"), []byte{0x10, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01}),
			f:    Frame{Reply: true, Enhanced: true, Rev: 2, IRDORD: iwarp.IRDORD{IRD: 1, ORD: 1}},
		},
		{
			name: "rev 1 Request M C with private data",
			wire: cat(keyReq(), []byte{0xc0, 0x01, 0x00, 0x03, 'a', 'b', 'c'}),
			f:    Frame{Markers: true, CRC: true, Rev: 1, PrivateData: []byte("abc")},
		},
		{
			name: "rev 1 Reply R (reject) with reason",
			wire: cat(keyRep(), []byte{0x20, 0x01, 0x00, 0x02, 'n', 'o'}),
			f:    Frame{Reply: true, Reject: true, Rev: 1, PrivateData: []byte("no")},
		},
		{
			name: "rev 2 Reply C S with A C RTR and private data",
			wire: cat(keyRep(), []byte{0x50, 0x02, 0x00, 0x06, 0x80, 0x02, 0x80, 0x03, 'o', 'k'}),
			f:    Frame{Reply: true, CRC: true, Enhanced: true, Rev: 2, IRDORD: iwarp.IRDORD{PeerToPeer: true, RTR: iwarp.RTRWrite, IRD: 2, ORD: 3}, PrivateData: []byte("ok")},
		},
		{
			name: "max private data",
			wire: cat(keyReq(), []byte{0x00, 0x01, 0x02, 0x00}, bytes.Repeat([]byte{7}, 512)),
			f:    Frame{Rev: 1, PrivateData: bytes.Repeat([]byte{7}, 512)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, n, err := ParseFrame(tc.wire)
			require.NoError(t, err)
			assert.Equal(t, len(tc.wire), n)
			assert.Equal(t, tc.f, f)
			assert.Equal(t, tc.wire, tc.f.Append(nil))
			assert.Equal(t, len(tc.wire), tc.f.len())
			require.NoError(t, tc.f.validate())
			// Every proper prefix is truncated, never an error of form.
			for i := range len(tc.wire) {
				_, _, err := ParseFrame(tc.wire[:i])
				assert.ErrorIs(t, err, errTruncated, "prefix %d", i)
			}
			// Trailing octets (the first FPDU) are not consumed.
			_, n, err = ParseFrame(append(append([]byte{}, tc.wire...), 0, 0, 0, 0))
			require.NoError(t, err)
			assert.Equal(t, len(tc.wire), n)
		})
	}
}

// TestFrameReceiveRules covers what RFC 5044 §7.1.1 and RFC 6581 §6 say a
// receiver ignores or rejects.
func TestFrameReceiveRules(t *testing.T) {
	t.Run("Res bits not checked", func(t *testing.T) {
		f, _, err := ParseFrame(cat(keyReq(), []byte{0x0f, 0x01, 0x00, 0x00}))
		require.NoError(t, err)
		assert.Equal(t, Frame{Rev: 1}, f)
	})
	t.Run("R not checked in a Request", func(t *testing.T) {
		f, _, err := ParseFrame(cat(keyReq(), []byte{0x20, 0x01, 0x00, 0x00}))
		require.NoError(t, err)
		assert.False(t, f.Reject)
	})
	t.Run("S is Res in revision 1", func(t *testing.T) {
		f, _, err := ParseFrame(cat(keyReq(), []byte{0x10, 0x01, 0x00, 0x02, 0xab, 0xcd}))
		require.NoError(t, err)
		assert.False(t, f.Enhanced)
		assert.Equal(t, []byte{0xab, 0xcd}, f.PrivateData)
	})
	for _, tc := range []struct {
		name  string
		wire  []byte
		cause error
	}{
		{"bad key", cat([]byte("MPA ID Xyz Frame"), []byte{0, 1, 0, 0}), errBadKey},
		{"lower-case key", cat([]byte("mpa id req frame"), []byte{0, 1, 0, 0}), errBadKey},
		{"PD_Length 513", cat(keyReq(), []byte{0, 1, 0x02, 0x01}, make([]byte, 513)), errPrivateDataLength},
		{"PD_Length 0xffff", cat(keyRep(), []byte{0, 1, 0xff, 0xff}), errPrivateDataLength},
		{"S with PD_Length 3", cat(keyReq(), []byte{0x10, 0x02, 0x00, 0x03, 0, 1, 0}), errPrivateDataLength},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseFrame(tc.wire)
			require.ErrorIs(t, err, tc.cause)
			var le *llp.Error
			require.ErrorAs(t, err, &le)
			assert.Equal(t, uint8(iwarp.LLPETypeMPA), le.EType)
			assert.Equal(t, uint8(iwarp.Term.MPAInvalidFrame.Code), le.Code)
		})
	}
}

func TestFrameValidate(t *testing.T) {
	assert.ErrorIs(t, (&Frame{Rev: 1, PrivateData: make([]byte, 513)}).validate(), errPrivateDataLength)
	assert.ErrorIs(t, (&Frame{Rev: 2, Enhanced: true, PrivateData: make([]byte, 509)}).validate(), errPrivateDataLength)
	assert.ErrorIs(t, (&Frame{Rev: 0}).validate(), errRevision)
	assert.ErrorIs(t, (&Frame{Rev: 1, Enhanced: true}).validate(), errRevision)
	assert.NoError(t, (&Frame{Rev: 2, Enhanced: true, PrivateData: make([]byte, 508)}).validate())
}

func TestFrameAppendNoAlloc(t *testing.T) {
	f := Frame{Reply: true, CRC: true, Enhanced: true, Rev: 2, IRDORD: iwarp.IRDORD{IRD: 4, ORD: 4}, PrivateData: []byte("hello")}
	b := make([]byte, 0, 64)
	assert.Zero(t, testing.AllocsPerRun(100, func() { b = f.Append(b[:0]) }))
}

// TestSiwCaptureFrames parses the MPA Request and Reply straight out of the
// captured TCP streams.
func TestSiwCaptureFrames(t *testing.T) {
	streams := tcpStreams(t, siwPcap)
	client, server := streams[0xd5f7], streams[7174]
	req, n, err := ParseFrame(client)
	require.NoError(t, err)
	assert.Equal(t, 24, n)
	assert.Equal(t, Frame{Enhanced: true, Rev: 2, IRDORD: iwarp.IRDORD{IRD: 1, ORD: 1}}, req)
	rep, n, err := ParseFrame(server)
	require.NoError(t, err)
	assert.Equal(t, 24, n)
	assert.Equal(t, Frame{Reply: true, Enhanced: true, Rev: 2, IRDORD: iwarp.IRDORD{IRD: 1, ORD: 1}}, rep)
}

// FuzzParseRequest feeds arbitrary startup frames (Request or Reply) to
// ParseFrame: it never panics, errors are typed, and a parsed frame
// re-encodes to the octets it came from up to the bits receivers ignore.
func FuzzParseRequest(f *testing.F) {
	f.Add(cat([]byte("MPA ID Req Frame"), []byte{0x10, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01}))
	f.Add(cat(keyRep(), []byte{0x50, 0x02, 0x00, 0x06, 0x80, 0x02, 0x80, 0x03, 'o', 'k'}))
	f.Add(cat(keyReq(), []byte{0xc0, 0x01, 0x00, 0x03, 'a', 'b', 'c'}))
	f.Add(cat(keyReq(), []byte{0x10, 0x02, 0x00, 0x03, 0, 1, 0}))
	f.Add(cat(keyRep(), []byte{0xff, 0xff, 0x02, 0x00}))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, n, err := ParseFrame(b)
		if err != nil {
			var le *llp.Error
			if !assert.ObjectsAreEqual(err, errTruncated) {
				require.ErrorAs(t, err, &le)
				require.Equal(t, uint8(iwarp.Term.MPAInvalidFrame.Code), le.Code)
			}
			return
		}
		require.LessOrEqual(t, n, len(b))
		require.Equal(t, n, fr.len())
		w := fr.Append(nil)
		require.Len(t, w, n)
		fr2, n2, err := ParseFrame(w)
		require.NoError(t, err)
		require.Equal(t, n, n2)
		require.Equal(t, fr, fr2)
		// Key, Rev, PD_Length and the ULP private data are carried exactly.
		require.Equal(t, b[:16], w[:16])
		require.Equal(t, b[17:20], w[17:20])
		require.Equal(t, b[n-len(fr.PrivateData):n], w[n-len(fr.PrivateData):n])
	})
}
