package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Version is the protocol version this package speaks, sent in Hello.
const Version uint8 = 1

// Sizes, in bytes.
const (
	LenSize    = 4           // the length field
	HeaderSize = LenSize + 1 // length and type

	// DefaultMaxFrame is the maximum frame size a receiver uses when it
	// does not choose one.
	DefaultMaxFrame = 4096
	// MinFrameLimit is the smallest maximum frame size a Framer accepts:
	// room for every fixed-size message and a hello with short fields.
	MinFrameLimit = 64
	// MaxFrameLimit is the largest maximum frame size a Framer accepts,
	// which bounds the buffer it allocates.
	MaxFrameLimit = 1 << 24

	// MaxToken and MaxLabel bound the hello's byte fields.
	MaxToken = 255
	MaxLabel = 255

	// Whole-frame sizes of the fixed-size messages, and the overhead of
	// the variable ones (frame size = overhead + variable bytes).
	HelloOverhead   = HeaderSize + 3
	InputOverhead   = HeaderSize + 1
	RequestOverhead = HeaderSize + 9
	ReplySize       = HeaderSize + 18
	DisconnectSize  = HeaderSize + 1
	PingSize        = HeaderSize + 8
	PongSize        = PingSize
)

// Type is a frame's message type (the byte after the length).
type Type uint8

// The message types. 0 is never valid.
const (
	TypeHello      Type = 1
	TypeInput      Type = 2
	TypeRequest    Type = 3
	TypeReply      Type = 4
	TypeDisconnect Type = 5
	TypePing       Type = 6
	TypePong       Type = 7
	numTypes            = 8
)

var typeNames = [numTypes]string{"", "Hello", "Input", "Request", "Reply", "Disconnect", "Ping", "Pong"}

// Valid reports whether t is a defined type.
func (t Type) Valid() bool { return t >= TypeHello && t < numTypes }

// String returns the type's name.
func (t Type) String() string {
	if t.Valid() {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Status is a Reply's outcome.
type Status uint8

// The reply statuses.
const (
	StatusOK       Status = 0 // the request was accepted and handled
	StatusRejected Status = 1 // a limit or gate refused it; Reason says which
	StatusFailed   Status = 2 // the server's handler refused it (not a limit)
	numStatuses           = 3
)

// Valid reports whether s is a defined status.
func (s Status) Valid() bool { return s < numStatuses }

// String returns the status's name.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "OK"
	case StatusRejected:
		return "Rejected"
	case StatusFailed:
		return "Failed"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Errors. Decoding returns these values themselves (never wrapped, so they
// cost no allocation); test them with errors.Is. ErrUnknownType is also
// ErrMalformed.
var (
	// ErrIncomplete: the buffer holds only the start of a frame (which, as
	// far as its header shows, is not oversize). Read more and try again.
	ErrIncomplete = errors.New("wire: incomplete frame")
	// ErrOversize: the header declares a frame larger than the maximum.
	// Nothing of the frame is consumed; the stream cannot be resynchronised.
	ErrOversize = errors.New("wire: frame larger than the maximum frame size")
	// ErrMalformed: a well-delimited frame whose body does not decode. The
	// frame is consumed; the stream stays in sync.
	ErrMalformed = errors.New("wire: malformed frame")
	// ErrUnknownType: a well-delimited frame of an undefined type (a kind
	// of ErrMalformed).
	ErrUnknownType error = unknownTypeError{}
	// ErrField: an encoder was given a field it cannot represent.
	ErrField = errors.New("wire: field cannot be encoded")
)

type unknownTypeError struct{}

func (unknownTypeError) Error() string        { return "wire: unknown frame type" }
func (unknownTypeError) Is(target error) bool { return target == ErrMalformed }

// FieldError names a message field that an encoder could not represent. It
// wraps ErrField. Len and Max are the field's length and the most it may
// be, in bytes; for Field "type" (a Type that is no message type) and
// "status" (a Reply Status that is not Valid) they are the value and the
// last valid one, and Error says so.
type FieldError struct {
	Type  Type
	Field string
	Len   int
	Max   int
}

func (e *FieldError) Error() string {
	switch e.Field { // Len is a value, not a length, for these two
	case "type":
		return fmt.Sprintf("wire: type %d is not a message type (1 to %d)", e.Len, e.Max)
	case "status":
		return fmt.Sprintf("wire: %v status %d is not a reply status (0 to %d)", e.Type, e.Len, e.Max)
	}
	return fmt.Sprintf("wire: %v %s is %d bytes, more than %d", e.Type, e.Field, e.Len, e.Max)
}

// Unwrap returns ErrField.
func (e *FieldError) Unwrap() error { return ErrField }

// Msg is one decoded (or to-be-encoded) message: a flat union of every
// type's fields, only those of Type meaningful. Its byte fields are views
// into the buffer it was decoded from. The zero value is an empty message
// of no type; a Msg is not safe for concurrent use.
type Msg struct {
	Type Type
	// Size is the whole frame's size in bytes, header included, as
	// declared by its length (set by decoding, also on ErrMalformed and
	// ErrOversize; ignored by encoding).
	Size int

	Version uint8  // Hello: protocol version
	Token   []byte // Hello: account token
	Label   []byte // Hello: population label

	Kind    uint8  // Input: channel; Request: command kind
	ID      uint64 // Request, Reply: request id (0 = the hello's reply)
	Payload []byte // Input, Request

	Status     Status // Reply
	Reason     uint8  // Reply, Disconnect: the server's reason (0 = none)
	RetryAfter uint64 // Reply: nanoseconds until a retry can pass (0 = n/a)

	Timestamp uint64 // Ping, Pong
}

// bodySize returns the body size of m, or an error if a field is too long.
func bodySize(m *Msg) (int, error) {
	switch m.Type {
	case TypeHello:
		if len(m.Token) > MaxToken {
			return 0, &FieldError{TypeHello, "token", len(m.Token), MaxToken}
		}
		if len(m.Label) > MaxLabel {
			return 0, &FieldError{TypeHello, "label", len(m.Label), MaxLabel}
		}
		return 3 + len(m.Token) + len(m.Label), nil
	case TypeInput:
		return payloadBody(TypeInput, InputOverhead, len(m.Payload))
	case TypeRequest:
		return payloadBody(TypeRequest, RequestOverhead, len(m.Payload))
	case TypeReply:
		if !m.Status.Valid() { // Decode would refuse it as malformed
			return 0, &FieldError{TypeReply, "status", int(m.Status), numStatuses - 1}
		}
		return ReplySize - HeaderSize, nil
	case TypeDisconnect:
		return DisconnectSize - HeaderSize, nil
	case TypePing, TypePong:
		return PingSize - HeaderSize, nil
	}
	return 0, &FieldError{m.Type, "type", int(m.Type), numTypes - 1}
}

func payloadBody(t Type, overhead, n int) (int, error) {
	if n > MaxFrameLimit-overhead {
		return 0, &FieldError{t, "payload", n, MaxFrameLimit - overhead}
	}
	return overhead - HeaderSize + n, nil
}

// FrameSize returns the size of m's frame once encoded, header included.
func FrameSize(m *Msg) (int, error) {
	n, err := bodySize(m)
	if err != nil {
		return 0, err
	}
	return HeaderSize + n, nil
}

// Append appends m's frame to dst and returns the extended slice. It does
// not allocate when dst has the capacity (see FrameSize). A message whose
// frame would exceed MaxFrameLimit, whose hello fields exceed 255 bytes,
// whose Type is no message type or whose Reply Status is not Valid is
// refused with a *FieldError and dst is returned unchanged. The
// receiver's own maximum frame size is the caller's to respect.
func Append(dst []byte, m *Msg) ([]byte, error) {
	n, err := bodySize(m)
	if err != nil {
		return dst, err
	}
	dst = AppendHeader(dst, uint32(n+1), m.Type)
	switch m.Type {
	case TypeHello:
		dst = append(dst, m.Version, byte(len(m.Token)))
		dst = append(dst, m.Token...)
		dst = append(dst, byte(len(m.Label)))
		dst = append(dst, m.Label...)
	case TypeInput:
		dst = append(dst, m.Kind)
		dst = append(dst, m.Payload...)
	case TypeRequest:
		dst = append(dst, m.Kind)
		dst = binary.BigEndian.AppendUint64(dst, m.ID)
		dst = append(dst, m.Payload...)
	case TypeReply:
		dst = binary.BigEndian.AppendUint64(dst, m.ID)
		dst = append(dst, byte(m.Status), m.Reason)
		dst = binary.BigEndian.AppendUint64(dst, m.RetryAfter)
	case TypeDisconnect:
		dst = append(dst, m.Reason)
	case TypePing, TypePong:
		dst = binary.BigEndian.AppendUint64(dst, m.Timestamp)
	}
	return dst, nil
}

// AppendHeader appends a frame header that declares length bytes after the
// length field and the given type. Append uses it; tests and hostile
// clients use it to forge headers whose length lies.
func AppendHeader(dst []byte, length uint32, t Type) []byte {
	dst = binary.BigEndian.AppendUint32(dst, length)
	return append(dst, byte(t))
}

// AppendHello appends a Hello of the current Version.
func AppendHello(dst, token, label []byte) ([]byte, error) {
	return Append(dst, &Msg{Type: TypeHello, Version: Version, Token: token, Label: label})
}

// AppendInput appends an Input on channel.
func AppendInput(dst []byte, channel uint8, payload []byte) ([]byte, error) {
	return Append(dst, &Msg{Type: TypeInput, Kind: channel, Payload: payload})
}

// AppendRequest appends a Request of the given kind and id.
func AppendRequest(dst []byte, kind uint8, id uint64, payload []byte) ([]byte, error) {
	return Append(dst, &Msg{Type: TypeRequest, Kind: kind, ID: id, Payload: payload})
}

// AppendReply appends a Reply. It panics on a status that is not Valid,
// which Decode would refuse: a caller's bug, not an input.
func AppendReply(dst []byte, id uint64, status Status, reason uint8, retryAfter uint64) []byte {
	dst, err := Append(dst, &Msg{Type: TypeReply, ID: id, Status: status, Reason: reason, RetryAfter: retryAfter})
	if err != nil {
		panic(err) // an invalid status: a caller's bug, as an index out of range is
	}
	return dst
}

// AppendDisconnect appends a Disconnect.
func AppendDisconnect(dst []byte, reason uint8) []byte {
	dst, _ = Append(dst, &Msg{Type: TypeDisconnect, Reason: reason})
	return dst
}

// AppendPing appends a Ping carrying ts.
func AppendPing(dst []byte, ts uint64) []byte {
	dst, _ = Append(dst, &Msg{Type: TypePing, Timestamp: ts})
	return dst
}

// AppendPong appends a Pong echoing ts.
func AppendPong(dst []byte, ts uint64) []byte {
	dst, _ = Append(dst, &Msg{Type: TypePong, Timestamp: ts})
	return dst
}

// Peek reads the header at the start of buf and returns the whole frame's
// size as declared. err is ErrIncomplete when fewer than LenSize bytes are
// there, ErrOversize when the size exceeds max (max ≤ 0 means
// DefaultMaxFrame), and ErrMalformed when the length is 0; the size is
// returned in all cases but the first.
func Peek(buf []byte, max int) (size int, err error) {
	if len(buf) < LenSize {
		return 0, ErrIncomplete
	}
	if max <= 0 {
		max = DefaultMaxFrame
	}
	// The size is computed in uint64 so that a lying 4 GiB length cannot
	// overflow int on a 32-bit platform.
	declared := uint64(binary.BigEndian.Uint32(buf)) + LenSize
	if declared > uint64(max) {
		return int(min(declared, uint64(math.MaxInt))), ErrOversize
	}
	if declared == LenSize {
		return LenSize, ErrMalformed
	}
	return int(declared), nil
}

// Decode decodes the frame at the start of buf into m (every field of m is
// overwritten) and returns the number of bytes it consumed. max is the
// maximum frame size (≤ 0 means DefaultMaxFrame). It never allocates.
//
//   - nil: n = m.Size bytes were one valid frame.
//   - ErrIncomplete: n = 0; buf is the start of a frame, read more.
//   - ErrOversize: n = 0; m.Size is the declared size.
//   - ErrMalformed or ErrUnknownType: n = m.Size; the frame is skipped and
//     m.Type is its type byte (0 if the length was 0).
func Decode(buf []byte, max int, m *Msg) (n int, err error) {
	*m = Msg{}
	size, err := Peek(buf, max)
	m.Size = size
	switch err {
	case nil:
	case ErrMalformed:
		return size, err
	default:
		return 0, err
	}
	if len(buf) < size {
		return 0, ErrIncomplete
	}
	m.Type = Type(buf[LenSize])
	return size, decodeBody(buf[HeaderSize:size], m)
}

func decodeBody(b []byte, m *Msg) error {
	switch m.Type {
	case TypeHello:
		if len(b) < 3 {
			return ErrMalformed
		}
		m.Version = b[0]
		tl := int(b[1])
		if len(b) < 3+tl {
			return ErrMalformed
		}
		m.Token = b[2 : 2+tl : 2+tl]
		ll := int(b[2+tl])
		if len(b) != 3+tl+ll {
			return ErrMalformed
		}
		m.Label = b[3+tl : 3+tl+ll : 3+tl+ll]
	case TypeInput:
		if len(b) < 1 {
			return ErrMalformed
		}
		m.Kind = b[0]
		m.Payload = b[1:len(b):len(b)]
	case TypeRequest:
		if len(b) < 9 {
			return ErrMalformed
		}
		m.Kind = b[0]
		m.ID = binary.BigEndian.Uint64(b[1:])
		m.Payload = b[9:len(b):len(b)]
	case TypeReply:
		if len(b) != ReplySize-HeaderSize {
			return ErrMalformed
		}
		m.ID = binary.BigEndian.Uint64(b)
		m.Status = Status(b[8])
		m.Reason = b[9]
		m.RetryAfter = binary.BigEndian.Uint64(b[10:])
		if !m.Status.Valid() {
			return ErrMalformed
		}
	case TypeDisconnect:
		if len(b) != DisconnectSize-HeaderSize {
			return ErrMalformed
		}
		m.Reason = b[0]
	case TypePing, TypePong:
		if len(b) != PingSize-HeaderSize {
			return ErrMalformed
		}
		m.Timestamp = binary.BigEndian.Uint64(b)
	default:
		return ErrUnknownType
	}
	return nil
}
