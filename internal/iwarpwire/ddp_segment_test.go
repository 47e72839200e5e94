package iwarpwire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 5041 §4.4, Figure 6: DDP header followed by the ULP payload.
func TestParseSegment_RFC5041_4_4(t *testing.T) {
	tagged := []byte{0xc1, 0x40, 0x12, 0x34, 0x56, 0x78, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 'h', 'i'}
	var s DDPSegment
	require.NoError(t, ParseDDPSegment(tagged, &s))
	assert.True(t, s.Tagged)
	assert.True(t, s.last())
	assert.Equal(t, DDPTaggedHeader{Last: true, RsvdULP: 0x40, STag: 0x12345678, TO: 0x1122334455667788}, s.Tag)
	assert.Equal(t, DDPTaggedHeaderLen, s.HeaderLen)
	assert.Equal(t, []byte("hi"), s.Payload)
	assert.Equal(t, &tagged[14], &s.Payload[0], "payload aliases the input")
	assert.Equal(t, tagged, s.append(nil))
	assert.Equal(t, len(tagged), s.len())

	untagged := []byte{0x01, 0x43, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 4, 'x'}
	require.NoError(t, ParseDDPSegment(untagged, &s))
	assert.False(t, s.Tagged)
	assert.False(t, s.last())
	assert.Equal(t, DDPUntaggedHeader{RsvdULP: [5]byte{0x43}, QN: 1, MSN: 9, MO: 4}, s.Untag)
	assert.Equal(t, DDPTaggedHeader{}, s.Tag, "stale tagged header cleared")
	assert.Equal(t, DDPUntaggedHeaderLen, s.HeaderLen)
	assert.Equal(t, []byte("x"), s.Payload)
	assert.Equal(t, untagged, s.append(nil))
	assert.Equal(t, len(untagged), s.len())

	// Header only: empty payload (zero-length message, RFC 5041 §5.2).
	require.NoError(t, ParseDDPSegment(untagged[:DDPUntaggedHeaderLen], &s))
	assert.Empty(t, s.Payload)
}

func TestParseSegmentErrors(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrDDPTruncated},
		{"tagged short", []byte{0xc1, 0, 0}, ErrDDPTruncated},
		{"untagged short", make([]byte, 17), errUntaggedVersion}, // DV=0 checked first
		{"untagged short DV ok", append([]byte{0x41}, make([]byte, 16)...), ErrDDPTruncated},
		{"tagged DV 0", append([]byte{0x80}, make([]byte, 13)...), errTaggedVersion},
		{"tagged DV 3", append([]byte{0xc3}, make([]byte, 13)...), errTaggedVersion},
		{"untagged DV 2", append([]byte{0x02}, make([]byte, 17)...), errUntaggedVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s DDPSegment
			err := ParseDDPSegment(tt.b, &s)
			assert.ErrorIs(t, err, tt.want)
			assert.Nil(t, s.Payload)
		})
	}
}

func TestParseSegmentNoAlloc(t *testing.T) {
	b := ddpTaggedSeg(true, 0, 1, 2, make([]byte, 100))
	var s DDPSegment
	allocs := testing.AllocsPerRun(100, func() { _ = ParseDDPSegment(b, &s) })
	assert.Zero(t, allocs)
}

func FuzzParseSegment(f *testing.F) {
	f.Add(ddpTaggedSeg(true, 0x40, 0x12345678, 0x1122334455667788, []byte("payload")))
	f.Add(ddpUntaggedSeg(false, 1, 1, 0, []byte("abc")))
	f.Add(ddpUntaggedSeg(true, 0, 0xffffffff, 0xfffffff0, nil))
	f.Add([]byte{})
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var s DDPSegment
		err := ParseDDPSegment(b, &s)
		if err != nil {
			var e *DDPError
			if !errors.As(err, &e) || !ValidDDPCode(e.Type, e.Code) {
				t.Fatalf("untyped or invalid error %v", err)
			}
			return
		}
		if s.HeaderLen+len(s.Payload) != len(b) {
			t.Fatalf("header %d + payload %d != %d", s.HeaderLen, len(s.Payload), len(b))
		}
		// A DDPSegment reused from an earlier parse (the receiver's scratch)
		// comes out as a fresh one, and either equals what the header
		// parsers give.
		dirty := DDPSegment{Tagged: !s.Tagged, HeaderLen: 99, Payload: []byte{1},
			Tag:   DDPTaggedHeader{Last: true, RsvdULP: 7, STag: 7, TO: 7},
			Untag: DDPUntaggedHeader{Last: true, RsvdULP: [5]byte{7}, QN: 7, MSN: 7, MO: 7}}
		if err := ParseDDPSegment(b, &dirty); err != nil || !reflect.DeepEqual(dirty, s) {
			t.Fatalf("reused segment %+v (%v), fresh %+v", dirty, err, s)
		}
		want1 := DDPSegment{Tagged: s.Tagged, HeaderLen: s.HeaderLen, Payload: b[s.HeaderLen:]}
		var herr error
		if s.Tagged {
			want1.Tag, _, herr = ParseDDPTaggedHeader(b)
		} else {
			want1.Untag, _, herr = ParseDDPUntaggedHeader(b)
		}
		if herr != nil || !reflect.DeepEqual(want1, s) {
			t.Fatalf("segment %+v, header parser %+v (%v)", s, want1, herr)
		}
		want := append([]byte{}, b...)
		want[0] &^= byte(DDPControlRsvdMask)
		if got := s.append(nil); !bytes.Equal(got, want) {
			t.Fatalf("round trip mismatch")
		}
	})
}
