package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sample returns one message of every type.
func sample() []Msg {
	return []Msg{
		{Type: TypeHello, Version: Version, Token: []byte("acct-7"), Label: []byte("honest")},
		{Type: TypeHello, Version: 9, Token: []byte{}, Label: []byte{}},
		{Type: TypeInput, Kind: 1, Payload: []byte{1, 2, 3}},
		{Type: TypeInput, Kind: 255, Payload: []byte{}},
		{Type: TypeRequest, Kind: 2, ID: 1<<63 + 5, Payload: []byte("buy")},
		{Type: TypeRequest, Kind: 0, ID: 0, Payload: []byte{}},
		{Type: TypeReply, ID: 42, Status: StatusRejected, Reason: 4, RetryAfter: 1_500_000},
		{Type: TypeReply, ID: 0, Status: StatusOK},
		{Type: TypeReply, ID: 3, Status: StatusFailed},
		{Type: TypeDisconnect, Reason: 8},
		{Type: TypePing, Timestamp: 123456789},
		{Type: TypePong, Timestamp: 1<<64 - 1},
	}
}

// The byte-by-byte layout of the package doc, checked on one frame of each
// type.
func TestGoldenBytes(t *testing.T) {
	cases := []struct {
		m    Msg
		want []byte
	}{
		{Msg{Type: TypeHello, Version: 1, Token: []byte("ab"), Label: []byte("h")},
			[]byte{0, 0, 0, 7, 1, 1, 2, 'a', 'b', 1, 'h'}},
		{Msg{Type: TypeInput, Kind: 3, Payload: []byte{9, 8}},
			[]byte{0, 0, 0, 4, 2, 3, 9, 8}},
		{Msg{Type: TypeRequest, Kind: 2, ID: 0x0102030405060708, Payload: []byte{7}},
			[]byte{0, 0, 0, 11, 3, 2, 1, 2, 3, 4, 5, 6, 7, 8, 7}},
		{Msg{Type: TypeReply, ID: 5, Status: StatusRejected, Reason: 1, RetryAfter: 0x100},
			[]byte{0, 0, 0, 19, 4, 0, 0, 0, 0, 0, 0, 0, 5, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0}},
		{Msg{Type: TypeDisconnect, Reason: 14}, []byte{0, 0, 0, 2, 5, 14}},
		{Msg{Type: TypePing, Timestamp: 258}, []byte{0, 0, 0, 9, 6, 0, 0, 0, 0, 0, 0, 1, 2}},
		{Msg{Type: TypePong, Timestamp: 258}, []byte{0, 0, 0, 9, 7, 0, 0, 0, 0, 0, 0, 1, 2}},
	}
	for _, c := range cases {
		got, err := Append(nil, &c.m)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "%v", c.m.Type)
		n, err := FrameSize(&c.m)
		require.NoError(t, err)
		assert.Equal(t, len(c.want), n)
	}
	assert.Len(t, AppendReply(nil, 1, StatusOK, 0, 0), ReplySize)
	assert.Len(t, AppendDisconnect(nil, 1), DisconnectSize)
	assert.Len(t, AppendPing(nil, 1), PingSize)
	assert.Len(t, AppendPong(nil, 1), PongSize)
	b, err := AppendInput(nil, 1, make([]byte, 10))
	require.NoError(t, err)
	assert.Len(t, b, InputOverhead+10)
	b, err = AppendRequest(nil, 1, 1, make([]byte, 10))
	require.NoError(t, err)
	assert.Len(t, b, RequestOverhead+10)
	b, err = AppendHello(nil, []byte("tok"), []byte("pop"))
	require.NoError(t, err)
	assert.Len(t, b, HelloOverhead+6)
	assert.Equal(t, Version, b[HeaderSize])
}

func TestRoundTripEveryType(t *testing.T) {
	for _, m := range sample() {
		buf, err := Append([]byte("prefix"), &m)
		require.NoError(t, err)
		frame := buf[len("prefix"):]
		var got Msg
		n, err := Decode(frame, 0, &got)
		require.NoError(t, err, "%v", m.Type)
		assert.Equal(t, len(frame), n)
		m.Size = len(frame)
		assert.Equal(t, m, got)
	}
}

func TestDecodeEveryPrefixIsIncomplete(t *testing.T) {
	for _, m := range sample() {
		frame, err := Append(nil, &m)
		require.NoError(t, err)
		for i := 0; i < len(frame); i++ {
			var got Msg
			n, err := Decode(frame[:i], 0, &got)
			assert.ErrorIs(t, err, ErrIncomplete, "%v prefix %d", m.Type, i)
			assert.Zero(t, n)
		}
	}
}

func TestOversizeIsRefusedFromTheHeaderAlone(t *testing.T) {
	const max = 100
	var m Msg
	// A frame of exactly max passes; one byte more is refused with only its
	// four length bytes present.
	ok := AppendHeader(nil, max-LenSize, TypeInput)
	ok = append(ok, make([]byte, max-HeaderSize)...)
	n, err := Decode(ok, max, &m)
	require.NoError(t, err)
	assert.Equal(t, max, n)

	for _, declared := range []uint32{max - LenSize + 1, 1 << 20, 1<<32 - 1} {
		hdr := AppendHeader(nil, declared, TypeInput)[:LenSize]
		n, err := Decode(hdr, max, &m)
		assert.ErrorIs(t, err, ErrOversize)
		assert.Zero(t, n)
		assert.Equal(t, int(declared)+LenSize, m.Size)
	}
	// max ≤ 0 is the default.
	hdr := AppendHeader(nil, DefaultMaxFrame-LenSize+1, TypeInput)
	_, err = Decode(hdr, 0, &m)
	assert.ErrorIs(t, err, ErrOversize)
}

func TestMalformedFramesAreSkipped(t *testing.T) {
	frame := func(t Type, body ...byte) []byte {
		return append(AppendHeader(nil, uint32(len(body)+1), t), body...)
	}
	cases := []struct {
		name string
		in   []byte
	}{
		{"zero length", []byte{0, 0, 0, 0}},
		{"type 0", frame(0)},
		{"unknown type", frame(200, 1, 2)},
		{"hello too short", frame(TypeHello, 1, 0)},
		{"hello token past end", frame(TypeHello, 1, 5, 'a', 0)},
		{"hello label short", frame(TypeHello, 1, 0, 3, 'a')},
		{"hello trailing byte", frame(TypeHello, 1, 0, 0, 9)},
		{"input empty", frame(TypeInput)},
		{"request short", frame(TypeRequest, 1, 0, 0, 0, 0, 0, 0, 0)},
		{"reply short", frame(TypeReply, make([]byte, 17)...)},
		{"reply long", frame(TypeReply, make([]byte, 19)...)},
		{"reply status", frame(TypeReply, 0, 0, 0, 0, 0, 0, 0, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0)},
		{"disconnect empty", frame(TypeDisconnect)},
		{"disconnect long", frame(TypeDisconnect, 1, 2)},
		{"ping short", frame(TypePing, 1, 2, 3)},
		{"pong long", frame(TypePong, make([]byte, 9)...)},
	}
	good := AppendPing(nil, 77)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			buf := append(append([]byte{}, c.in...), good...)
			var d Decoder
			d.Reset(buf)
			var m Msg
			err := d.Next(&m)
			assert.ErrorIs(t, err, ErrMalformed)
			assert.Equal(t, len(c.in), m.Size)
			assert.Equal(t, len(c.in), d.Consumed())
			// The stream is still in sync.
			require.NoError(t, d.Next(&m))
			assert.Equal(t, TypePing, m.Type)
			assert.Equal(t, uint64(77), m.Timestamp)
			assert.ErrorIs(t, d.Next(&m), io.EOF)
		})
	}
	var m Msg
	_, err := Decode(frame(99), 0, &m)
	assert.ErrorIs(t, err, ErrUnknownType)
	assert.ErrorIs(t, err, ErrMalformed)
	assert.Equal(t, Type(99), m.Type)
}

func TestEncodeRefusesFieldsItCannotRepresent(t *testing.T) {
	long := make([]byte, 256)
	cases := []Msg{
		{Type: TypeHello, Token: long},
		{Type: TypeHello, Label: long},
		{Type: TypeInput, Payload: make([]byte, MaxFrameLimit)},
		{Type: TypeRequest, Payload: make([]byte, MaxFrameLimit-RequestOverhead+1)},
		{Type: 0},
		{Type: 8},
	}
	for _, m := range cases {
		dst := []byte("keep")
		out, err := Append(dst, &m)
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrField)
		var fe *FieldError
		require.ErrorAs(t, err, &fe)
		assert.NotEmpty(t, fe.Field)
		assert.Equal(t, []byte("keep"), out)
	}
	// The largest payload that fits is accepted.
	_, err := Append(nil, &Msg{Type: TypeRequest, Payload: make([]byte, MaxFrameLimit-RequestOverhead)})
	assert.NoError(t, err)
}

func TestDecoderWalksManyFramesInOneBuffer(t *testing.T) {
	var buf []byte
	msgs := sample()
	for i := range msgs {
		var err error
		buf, err = Append(buf, &msgs[i])
		require.NoError(t, err)
	}
	tail := AppendPing(nil, 5)[:7]
	buf = append(buf, tail...)
	d := Decoder{Max: 1024}
	d.Reset(buf)
	var m Msg
	for i := range msgs {
		require.NoError(t, d.Next(&m), "frame %d", i)
		assert.Equal(t, msgs[i].Type, m.Type)
	}
	assert.ErrorIs(t, d.Next(&m), ErrIncomplete)
	assert.Equal(t, tail, d.Rest())
	assert.Equal(t, len(buf)-len(tail), d.Consumed())

	// Oversize is sticky in a Decoder too.
	d.Reset(AppendHeader(nil, 5000, TypeInput))
	assert.ErrorIs(t, d.Next(&m), ErrOversize)
	assert.ErrorIs(t, d.Next(&m), ErrOversize)

	var empty Decoder
	assert.ErrorIs(t, empty.Next(&m), io.EOF)
}

// Appending to any view a decode returns (token, label, payload) leaves the
// input untouched: each view's capacity ends with its field.
func TestDecodedViewsDoNotReachPastTheirField(t *testing.T) {
	buf, err := AppendHello(nil, []byte("tok"), []byte("pop"))
	require.NoError(t, err)
	buf, err = AppendInput(buf, 1, []byte{1, 2})
	require.NoError(t, err)
	buf, err = AppendRequest(buf, 1, 9, []byte{3})
	require.NoError(t, err)
	buf = AppendPing(buf, 1)
	orig := bytes.Clone(buf)
	var d Decoder
	d.Reset(buf)
	var m Msg
	n := 0
	for d.Next(&m) == nil {
		n++
		_ = append(m.Token, 'X')
		_ = append(m.Label, 'X')
		_ = append(m.Payload, 'X')
	}
	require.Equal(t, 4, n)
	assert.Equal(t, orig, buf, "a view's append wrote into the input")
}

// A Reply status Decode would refuse is refused when encoding too.
func TestAppendRefusesAnInvalidStatus(t *testing.T) {
	_, err := Append(nil, &Msg{Type: TypeReply, ID: 1, Status: Status(7)})
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "status", fe.Field)
	assert.Equal(t, 7, fe.Len)
	assert.Equal(t, "wire: Reply status 7 is not a reply status (0 to 2)", err.Error())
	assert.Panics(t, func() { AppendReply(nil, 1, Status(3), 0, 0) })
	b := AppendReply(nil, 1, StatusFailed, 0, 0)
	var m Msg
	_, err = Decode(b, 0, &m)
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, m.Status)
}

func TestNewFramerValidatesSizes(t *testing.T) {
	for _, c := range [][2]int{{MinFrameLimit - 1, 0}, {MaxFrameLimit + 1, 0}, {100, 99}, {100, 2*MaxFrameLimit + 1}} {
		_, err := NewFramer(bytes.NewReader(nil), c[0], c[1])
		assert.ErrorIs(t, err, ErrBufferSize, "%v", c)
	}
	f, err := NewFramer(bytes.NewReader(nil), 100, 0)
	require.NoError(t, err)
	assert.Equal(t, 200, f.Cap())
	assert.Equal(t, 100, f.Max())
}

func stream(t *testing.T) ([]byte, []Msg) {
	t.Helper()
	var buf []byte
	var msgs []Msg
	for r := 0; r < 20; r++ {
		for _, m := range sample() {
			var err error
			buf, err = Append(buf, &m)
			require.NoError(t, err)
			msgs = append(msgs, m)
		}
	}
	return buf, msgs
}

func TestFramerReadsAnyChunking(t *testing.T) {
	buf, msgs := stream(t)
	readers := map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(buf) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(buf)) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(buf)) },
		"data+EOF": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(buf)) },
	}
	for name, mk := range readers {
		t.Run(name, func(t *testing.T) {
			f, err := NewFramer(mk(), MinFrameLimit, 0)
			require.NoError(t, err)
			var m Msg
			for i, want := range msgs {
				require.NoError(t, f.ReadMsg(&m), "frame %d", i)
				want.Size, _ = FrameSize(&want)
				assert.True(t, equalMsg(want, m), "frame %d: %+v, want %+v", i, m, want)
			}
			assert.ErrorIs(t, f.ReadMsg(&m), io.EOF)
			assert.ErrorIs(t, f.ReadMsg(&m), io.EOF)
			assert.Equal(t, 2*MinFrameLimit, f.Cap())
		})
	}
}

func TestFramerFillThenNextChargesPerRead(t *testing.T) {
	var buf []byte
	for i := 0; i < 10; i++ {
		buf = AppendPing(buf, uint64(i))
	}
	f, err := NewFramer(bytes.NewReader(buf), 64, 1024)
	require.NoError(t, err)
	n, err := f.Fill()
	require.NoError(t, err)
	assert.Equal(t, len(buf), n)
	var m Msg
	frames := 0
	for f.Next(&m) == nil {
		frames++
	}
	assert.Equal(t, 10, frames)
	assert.Zero(t, f.Buffered())
	_, err = f.Fill()
	assert.ErrorIs(t, err, io.EOF)
	assert.ErrorIs(t, f.Err(), io.EOF)
}

func TestFramerErrors(t *testing.T) {
	var m Msg
	// End of stream inside a frame.
	frame := AppendPing(nil, 1)
	f, err := NewFramer(bytes.NewReader(frame[:8]), 64, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, f.ReadMsg(&m), io.ErrUnexpectedEOF)

	// Oversize is refused with the body never sent, and is sticky.
	hdr := AppendHeader(nil, 1<<30, TypeInput)
	f, err = NewFramer(bytes.NewReader(hdr), 64, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, f.ReadMsg(&m), ErrOversize)
	assert.Equal(t, 1<<30+LenSize, m.Size)
	assert.ErrorIs(t, f.ReadMsg(&m), ErrOversize)
	_, err = f.Fill()
	assert.ErrorIs(t, err, ErrOversize)

	// A read error other than EOF is returned and sticky.
	boom := errors.New("boom")
	f, err = NewFramer(iotest.ErrReader(boom), 64, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, f.ReadMsg(&m), boom)
	assert.ErrorIs(t, f.ReadMsg(&m), boom)

	// A malformed frame is returned and the next one still decodes.
	bad := append(AppendHeader(nil, 2, TypeReply), 0)
	f, err = NewFramer(bytes.NewReader(append(bad, frame...)), 64, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, f.ReadMsg(&m), ErrMalformed)
	require.NoError(t, f.ReadMsg(&m))
	assert.Equal(t, TypePing, m.Type)

	// A reader that never makes progress is given up on.
	f, err = NewFramer(zeroReader{}, 64, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, f.ReadMsg(&m), io.ErrNoProgress)
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestZeroAllocations(t *testing.T) {
	msgs := sample()
	dst := make([]byte, 0, 4096)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		dst = dst[:0]
		for i := range msgs {
			dst, _ = Append(dst, &msgs[i])
		}
		dst = AppendReply(dst, 1, StatusOK, 0, 0)
		dst = AppendPing(dst, 1)
	}), "encode")

	var m Msg
	var d Decoder
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		d.Reset(dst)
		for d.Next(&m) == nil {
		}
		_, _ = Decode(dst[:3], 0, &m)                                // incomplete
		_, _ = Decode(AppendHeader(dst[len(dst):], 1<<31, 2), 0, &m) // oversize
	}), "decode")

	buf, _ := stream(t)
	r := bytes.NewReader(buf)
	f, err := NewFramer(r, 64, 0)
	require.NoError(t, err)
	assert.Zero(t, testing.AllocsPerRun(20, func() {
		r.Reset(buf)
		f.err = nil
		for f.ReadMsg(&m) == nil {
		}
	}), "framer")
}

// Encoding a message of no known type names the type, not a length.
func TestFieldErrorOfAnUnknownType(t *testing.T) {
	for _, typ := range []Type{0, numTypes} {
		_, err := Append(nil, &Msg{Type: typ})
		if !errors.Is(err, ErrField) {
			t.Fatalf("type %d: %v, want ErrField", typ, err)
		}
		if want := fmt.Sprintf("wire: type %d is not a message type (1 to %d)", typ, numTypes-1); err.Error() != want {
			t.Errorf("type %d: %q, want %q", typ, err, want)
		}
	}
}
