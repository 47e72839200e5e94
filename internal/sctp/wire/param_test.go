package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseParam_RFC9260_3_2_1(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    Param
		wantN   int
		wantErr error
	}{
		{"no value", "c000 0004", Param{Type: ParamForwardTSNSupported, Value: []byte{}}, 4, nil},
		{"padded value", "000c 0006 0005 0000", Param{Type: ParamSupportedAddrTypes, Value: []byte{0, 5}}, 8, nil},
		{"last one unpadded", "000c 0006 0005", Param{Type: ParamSupportedAddrTypes, Value: []byte{0, 5}}, 6, nil},
		{"short header", "000c 00", Param{}, 0, ErrParamLength},
		{"length below the header", "000c 0002", Param{}, 0, ErrParamLength},
		{"length beyond the chunk", "0007 0010 01020304", Param{}, 0, ErrParamLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, n, err := ParseParam(hx(t, tc.in))
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.ErrorIs(t, err, ErrMalformed)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, p)
			assert.Equal(t, tc.wantN, n)
			assert.Equal(t, len(p.Value)+4, p.Len())
		})
	}
}

func TestParamIter(t *testing.T) {
	it := NewParamIter(hx(t, "c000 0004 000c 0006 0005 0000 0007 0005 aa"))
	var got []ParamType
	for p, ok := it.Next(); ok; p, ok = it.Next() {
		got = append(got, p.Type)
	}
	assert.NoError(t, it.Err())
	assert.Equal(t, []ParamType{ParamForwardTSNSupported, ParamSupportedAddrTypes, ParamStateCookie}, got)

	it = NewParamIter(hx(t, "c000 0004 0007 0009 aa"))
	_, ok := it.Next()
	require.True(t, ok)
	_, ok = it.Next()
	assert.False(t, ok)
	assert.ErrorIs(t, it.Err(), ErrParamLength)
}

func TestParamTypeAction_RFC9260_3_2_1(t *testing.T) {
	cases := []struct {
		t    ParamType
		want Action
	}{
		{ParamStateCookie, ActionStop},
		{0x3fff, ActionStop},
		{0x4000, ActionStopReport},
		{ParamECNCapable, ActionSkip},
		{ParamSupportedExtensions, ActionSkip},
		{ParamForwardTSNSupported, ActionSkipReport},
		{ParamAdaptationLayer, ActionSkipReport},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, tc.t.Action(), "%v", tc.t)
	}
}

func TestParamTypeString(t *testing.T) {
	assert.Equal(t, "State Cookie", ParamStateCookie.String())
	assert.Equal(t, "Adaptation Layer Indication", ParamAdaptationLayer.String())
	assert.Equal(t, "parameter type 4660", ParamType(0x1234).String())
}

func TestAppendParamAligns_RFC9260_3_2_1(t *testing.T) {
	b := AppendParam(nil, ParamStateCookie, []byte{1, 2, 3})
	assert.Equal(t, hx(t, "0007 0007 010203"), b, "no padding after the last parameter")
	b = AppendParam(b, ParamForwardTSNSupported, nil)
	assert.Equal(t, hx(t, "0007 0007 010203 00 c000 0004"), b, "the next one starts aligned")
	b = Param{Type: ParamHeartbeatInfo, Value: []byte{9}}.Append(b)
	assert.Equal(t, hx(t, "0007 0007 010203 00 c000 0004 0001 0005 09"), b)
	assert.Panics(t, func() { AppendParam(nil, ParamStateCookie, make([]byte, 65532)) })
}
