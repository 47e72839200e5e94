package ddpchunk

import (
	"bytes"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
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
		want    Control
		wantErr error
	}{
		{name: "Initiate, empty private data", wire: []byte{0x00, 0x00, 0x00, 0x01},
			want: Control{SSN: 0, Function: FuncInitiate, PrivateData: []byte{}}},
		{name: "Accept, 1 octet", wire: []byte{0x00, 0x00, 0x00, 0x02, 0x5A},
			want: Control{Function: FuncAccept, PrivateData: []byte{0x5A}}},
		{name: "Reject, 512 octets", wire: append([]byte{0x00, 0x00, 0x00, 0x03}, pd512...),
			want: Control{Function: FuncReject, PrivateData: pd512}},
		{name: "Terminate ssn 9", wire: []byte{0x00, 0x09, 0x00, 0x04},
			want: Control{SSN: 9, Function: FuncTerminate}},
		// RFC 6581 §9: A=1 B=0 IRD=16; C=1 D=1 ORD=0x3FFF.
		{name: "Enhanced Initiate", wire: []byte{0x00, 0x00, 0x00, 0x05, 0x80, 0x10, 0xFF, 0xFF, 'h', 'i'},
			want: Control{Function: FuncEnhancedInitiate,
				IRDORD:      iwarp.IRDORD{PeerToPeer: true, IRD: 16, ORD: 0x3FFF, RTR: iwarp.RTRWrite | iwarp.RTRRead},
				PrivateData: []byte("hi")}},
		{name: "Enhanced Accept A and B", wire: []byte{0x00, 0x00, 0x00, 0x06, 0xC0, 0x04, 0x00, 0x08},
			want: Control{Function: FuncEnhancedAccept, IRDORD: iwarp.IRDORD{PeerToPeer: true, IRD: 4, ORD: 8, RTR: iwarp.RTRSend}, PrivateData: []byte{}}},
		{name: "Enhanced Reject", wire: []byte{0x00, 0x00, 0x00, 0x07, 0x3F, 0xFF, 0x3F, 0xFF, 0x01},
			want: Control{Function: FuncEnhancedReject, IRDORD: iwarp.IRDORD{IRD: 0x3FFF, ORD: 0x3FFF}, PrivateData: []byte{1}}},
		{name: "Enhanced, 508 octets after word", wire: append([]byte{0, 0, 0, 5, 0, 1, 0, 1}, pd512[:508]...),
			want: Control{Function: FuncEnhancedInitiate, IRDORD: iwarp.IRDORD{IRD: 1, ORD: 1}, PrivateData: pd512[:508]}},
		{name: "truncated", wire: []byte{0, 0, 0}, wantErr: ErrTruncated},
		{name: "function 0", wire: []byte{0, 0, 0, 0}, wantErr: ErrUnknownFunction},
		{name: "function 8", wire: []byte{0, 0, 0, 8}, wantErr: ErrUnknownFunction},
		{name: "function 0x0101", wire: []byte{0, 0, 1, 1}, wantErr: ErrUnknownFunction},
		{name: "513 octets private data", wire: append([]byte{0, 0, 0, 1}, append(pd512, 0)...), wantErr: ErrPrivateDataTooLong},
		{name: "enhanced 509 after word", wire: append(append([]byte{0, 0, 0, 5, 0, 1, 0, 1}, pd512[:508]...), 0), wantErr: ErrPrivateDataTooLong},
		{name: "Terminate with data", wire: []byte{0, 1, 0, 4, 0}, wantErr: ErrTerminateWithData},
		{name: "Enhanced Accept without word", wire: []byte{0, 0, 0, 6, 0, 1, 0}, wantErr: ErrMissingIRDORD},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := ParseControl(tc.wire)
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
			require.NoError(t, got.Validate())
			assert.Equal(t, len(tc.wire), got.Len())
			assert.Equal(t, tc.wire, got.Append(nil))
		})
	}
}

func TestControl_UnknownFunctionTyped(t *testing.T) {
	_, _, err := ParseControl([]byte{0, 0, 0x12, 0x34})
	var ufe *UnknownFunctionError
	require.ErrorAs(t, err, &ufe)
	assert.Equal(t, FunctionCode(0x1234), ufe.Code)
}

func TestControl_Validate(t *testing.T) {
	assert.ErrorIs(t, Control{Function: FuncTerminate, PrivateData: []byte{1}}.Validate(), ErrTerminateWithData)
	assert.ErrorIs(t, Control{Function: 9}.Validate(), ErrUnknownFunction)
	assert.ErrorIs(t, Control{Function: FuncAccept, PrivateData: make([]byte, 513)}.Validate(), ErrPrivateDataTooLong)
	assert.ErrorIs(t, Control{Function: FuncEnhancedAccept, PrivateData: make([]byte, 509)}.Validate(), ErrPrivateDataTooLong)
	assert.ErrorIs(t, Control{Function: FuncEnhancedAccept, IRDORD: iwarp.IRDORD{IRD: 0x4000}}.Validate(), iwarp.ErrInvalidIRDORD)
	assert.NoError(t, Control{Function: FuncEnhancedAccept, PrivateData: make([]byte, 508)}.Validate())
}

func TestFunctionCode_Names(t *testing.T) {
	assert.Equal(t, "EnhancedReject", FuncEnhancedReject.String())
	assert.Equal(t, FuncInitiate, Base(FuncEnhancedInitiate))
	assert.Equal(t, FuncTerminate, Base(FuncTerminate))
	assert.Equal(t, "FunctionCode(0x0009)", FunctionCode(9).String())
}

func TestControl_AppendNoAlloc(t *testing.T) {
	c := Control{Function: FuncEnhancedAccept, IRDORD: iwarp.IRDORD{IRD: 3, ORD: 4}, PrivateData: make([]byte, 100)}
	buf := make([]byte, 0, 600)
	allocs := testing.AllocsPerRun(100, func() { buf = c.Append(buf[:0]) })
	assert.Zero(t, allocs)
}

func FuzzControl(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 5, 0x80, 0x10, 0xFF, 0xFF, 'h', 'i'})
	f.Add([]byte{0, 9, 0, 4})
	f.Add([]byte{0, 9, 0, 4, 1})
	f.Add([]byte{0, 0, 0, 7, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, n, err := ParseControl(b)
		if err != nil {
			return
		}
		if n != len(b) {
			t.Fatalf("consumed %d of %d", n, len(b))
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed message does not validate: %v", err)
		}
		want := b
		if Enhanced(c.Function) {
			// B, C, D without A are ignored on reception (RFC 6581 §9.2).
			want = append(b[:HeaderLen:HeaderLen], clientServerZeroed(b[HeaderLen:])...)
		}
		if !bytes.Equal(c.Append(nil), want) || c.Len() != len(b) {
			t.Fatalf("round trip mismatch")
		}
	})
}

// clientServerZeroed returns a copy of b whose IRD/ORD word at offset 0 has
// B, C and D cleared when A is 0, as a receiver reads it (RFC 6581 §9.2).
func clientServerZeroed(b []byte) []byte {
	b = append([]byte(nil), b...)
	if len(b) >= iwarpwire.IRDORDLen && b[0]&0x80 == 0 {
		b[0] &^= 0x40
		b[2] &^= 0xC0
	}
	return b
}
