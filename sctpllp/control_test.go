package sctpllp

import (
	"bytes"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hand-built images of RFC 5043 §5.2.3 (DDP-SSN, function code, private
// data) and RFC 6581 §7/§9 (enhanced codes, A|B|IRD C|D|ORD word).
func TestControl_RFC5043_5_2_3(t *testing.T) {
	pd512 := bytes.Repeat([]byte{0xAB}, 512)
	tests := []struct {
		name    string
		wire    []byte
		want    controlMsg
		wantErr error
	}{
		{name: "Initiate, empty private data", wire: []byte{0x00, 0x00, 0x00, 0x01},
			want: controlMsg{SSN: 0, Function: FuncInitiate, PrivateData: []byte{}}},
		{name: "Accept, 1 octet", wire: []byte{0x00, 0x00, 0x00, 0x02, 0x5A},
			want: controlMsg{Function: FuncAccept, PrivateData: []byte{0x5A}}},
		{name: "Reject, 512 octets", wire: append([]byte{0x00, 0x00, 0x00, 0x03}, pd512...),
			want: controlMsg{Function: FuncReject, PrivateData: pd512}},
		{name: "Terminate ssn 9", wire: []byte{0x00, 0x09, 0x00, 0x04},
			want: controlMsg{SSN: 9, Function: FuncTerminate}},
		// RFC 6581 §9: A=1 B=0 IRD=16; C=1 D=1 ORD=0x3FFF.
		{name: "Enhanced Initiate", wire: []byte{0x00, 0x00, 0x00, 0x05, 0x80, 0x10, 0xFF, 0xFF, 'h', 'i'},
			want: controlMsg{Function: FuncEnhancedInitiate,
				IRDORD:      iwarp.IRDORD{PeerToPeer: true, IRD: 16, ORD: 0x3FFF, RTR: iwarp.RTRWrite | iwarp.RTRRead},
				PrivateData: []byte("hi")}},
		{name: "Enhanced Accept A and B", wire: []byte{0x00, 0x00, 0x00, 0x06, 0xC0, 0x04, 0x00, 0x08},
			want: controlMsg{Function: FuncEnhancedAccept, IRDORD: iwarp.IRDORD{PeerToPeer: true, IRD: 4, ORD: 8, RTR: iwarp.RTRSend}, PrivateData: []byte{}}},
		{name: "Enhanced Reject", wire: []byte{0x00, 0x00, 0x00, 0x07, 0x3F, 0xFF, 0x3F, 0xFF, 0x01},
			want: controlMsg{Function: FuncEnhancedReject, IRDORD: iwarp.IRDORD{IRD: 0x3FFF, ORD: 0x3FFF}, PrivateData: []byte{1}}},
		{name: "Enhanced, 508 octets after word", wire: append([]byte{0, 0, 0, 5, 0, 1, 0, 1}, pd512[:508]...),
			want: controlMsg{Function: FuncEnhancedInitiate, IRDORD: iwarp.IRDORD{IRD: 1, ORD: 1}, PrivateData: pd512[:508]}},
		{name: "truncated", wire: []byte{0, 0, 0}, wantErr: errTruncated},
		{name: "function 0", wire: []byte{0, 0, 0, 0}, wantErr: errUnknownFunction},
		{name: "function 8", wire: []byte{0, 0, 0, 8}, wantErr: errUnknownFunction},
		{name: "function 0x0101", wire: []byte{0, 0, 1, 1}, wantErr: errUnknownFunction},
		{name: "513 octets private data", wire: append([]byte{0, 0, 0, 1}, append(pd512, 0)...), wantErr: errPrivateDataTooLong},
		{name: "enhanced 509 after word", wire: append(append([]byte{0, 0, 0, 5, 0, 1, 0, 1}, pd512[:508]...), 0), wantErr: errPrivateDataTooLong},
		{name: "Terminate with data", wire: []byte{0, 1, 0, 4, 0}, wantErr: errTerminateWithData},
		{name: "Enhanced Accept without word", wire: []byte{0, 0, 0, 6, 0, 1, 0}, wantErr: errMissingIRDORD},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := parseControl(tc.wire)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, len(tc.wire), n)
			assert.Equal(t, tc.want.SSN, got.SSN)
			assert.Equal(t, tc.want.Function, got.Function)
			assert.Equal(t, tc.want.IRDORD, got.IRDORD)
			assert.Equal(t, len(tc.want.PrivateData), len(got.PrivateData))
			assert.True(t, bytes.Equal(tc.want.PrivateData, got.PrivateData))
			require.NoError(t, got.validate())
			assert.Equal(t, len(tc.wire), got.wireLen())
			assert.Equal(t, tc.wire, got.appendTo(nil))
		})
	}
}

func TestControl_UnknownFunctionTyped(t *testing.T) {
	_, _, err := parseControl([]byte{0, 0, 0x12, 0x34})
	var ufe *unknownFunctionError
	require.ErrorAs(t, err, &ufe)
	assert.Equal(t, FunctionCode(0x1234), ufe.Code)
}

func TestControl_Validate(t *testing.T) {
	assert.ErrorIs(t, controlMsg{Function: FuncTerminate, PrivateData: []byte{1}}.validate(), errTerminateWithData)
	assert.ErrorIs(t, controlMsg{Function: 9}.validate(), errUnknownFunction)
	assert.ErrorIs(t, controlMsg{Function: FuncAccept, PrivateData: make([]byte, 513)}.validate(), errPrivateDataTooLong)
	assert.ErrorIs(t, controlMsg{Function: FuncEnhancedAccept, PrivateData: make([]byte, 509)}.validate(), errPrivateDataTooLong)
	assert.ErrorIs(t, controlMsg{Function: FuncEnhancedAccept, IRDORD: iwarp.IRDORD{IRD: 0x4000}}.validate(), iwarp.ErrInvalidIRDORD)
	assert.NoError(t, controlMsg{Function: FuncEnhancedAccept, PrivateData: make([]byte, 508)}.validate())
}

func TestFunctionCode_Names(t *testing.T) {
	assert.Equal(t, "EnhancedReject", FuncEnhancedReject.String())
	assert.Equal(t, FuncInitiate, FuncEnhancedInitiate.base())
	assert.Equal(t, FuncTerminate, FuncTerminate.base())
	assert.Equal(t, "FunctionCode(0x0009)", FunctionCode(9).String())
}

func TestControl_AppendNoAlloc(t *testing.T) {
	c := controlMsg{Function: FuncEnhancedAccept, IRDORD: iwarp.IRDORD{IRD: 3, ORD: 4}, PrivateData: make([]byte, 100)}
	buf := make([]byte, 0, 600)
	allocs := testing.AllocsPerRun(100, func() { buf = c.appendTo(buf[:0]) })
	assert.Zero(t, allocs)
}

func FuzzControl(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 5, 0x80, 0x10, 0xFF, 0xFF, 'h', 'i'})
	f.Add([]byte{0, 9, 0, 4})
	f.Add([]byte{0, 9, 0, 4, 1})
	f.Add([]byte{0, 0, 0, 7, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, n, err := parseControl(b)
		if err != nil {
			return
		}
		if n != len(b) {
			t.Fatalf("consumed %d of %d", n, len(b))
		}
		if err := c.validate(); err != nil {
			t.Fatalf("parsed message does not validate: %v", err)
		}
		want := b
		if c.Function.isEnhanced() {
			// B, C, D without A are ignored on reception (RFC 6581 §9.2).
			want = append(b[:controlHeaderLen:controlHeaderLen], clientServerZeroed(b[controlHeaderLen:])...)
		}
		if !bytes.Equal(c.appendTo(nil), want) || c.wireLen() != len(b) {
			t.Fatalf("round trip mismatch")
		}
	})
}
