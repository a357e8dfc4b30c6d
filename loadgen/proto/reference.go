package proto

import (
	"errors"
	"io"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// ReferenceName is the reference protocol's registered name.
const ReferenceName = "sluice"

// Reference is the reference protocol (package loadgen/wire): 4-byte
// big-endian length-prefixed binary frames, channels by code. The zero
// value is ready to use.
type Reference struct{}

// Name returns ReferenceName.
func (Reference) Name() string { return ReferenceName }

// The wire encoders fail only on fields over their bounds (a token or
// label over 255 bytes, a payload over the largest frame), which clients
// never send: a client cuts its label and sizes its payloads within them.

// AppendHello appends a Hello frame.
func (Reference) AppendHello(dst, token, label []byte) []byte {
	dst, _ = wire.AppendHello(dst, token, label)
	return dst
}

// AppendInput appends an Input frame on ch's code.
func (Reference) AppendInput(dst []byte, ch Channel, payload []byte) []byte {
	dst, _ = wire.AppendInput(dst, ch.Code, payload)
	return dst
}

// AppendRequest appends a Request frame on ch's code.
func (Reference) AppendRequest(dst []byte, ch Channel, id uint64, payload []byte) []byte {
	dst, _ = wire.AppendRequest(dst, ch.Code, id, payload)
	return dst
}

// AppendPing appends a Ping frame.
func (Reference) AppendPing(dst []byte, id uint64) []byte { return wire.AppendPing(dst, id) }

// NewReader returns a reader of reference frames of up to
// wire.DefaultMaxFrame bytes.
func (Reference) NewReader(r io.Reader) Reader {
	fr, err := wire.NewFramer(r, wire.DefaultMaxFrame, 0)
	if err != nil { // the sizes are constants
		panic(err)
	}
	return &referenceReader{fr: fr}
}

type referenceReader struct {
	fr *wire.Framer
	m  wire.Msg
}

// errNotForClient: a frame a server does not send to a client.
var errNotForClient = errors.New("proto: a frame a server does not send a client")

func (r *referenceReader) Next(f *Frame) error {
	if err := r.fr.ReadMsg(&r.m); err != nil {
		return err
	}
	m := &r.m
	*f = Frame{}
	switch m.Type {
	case wire.TypeReply:
		f.Kind, f.ID, f.Status, f.Reason, f.RetryAfter = Reply, m.ID, Status(m.Status), m.Reason, m.RetryAfter
	case wire.TypePong:
		f.Kind, f.Timestamp = Pong, m.Timestamp
	case wire.TypeDisconnect:
		f.Kind, f.Reason = Disconnect, m.Reason
	default:
		return errNotForClient
	}
	return nil
}
