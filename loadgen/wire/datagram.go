package wire

import "encoding/binary"

// Datagram sizes, in bytes (see the package doc's "Datagrams").
const (
	// DatagramHeaderSize is a datagram's header: kind u8 | conn u64.
	DatagramHeaderSize = 9
	// CookieSize is the size of a handshake cookie.
	CookieSize = 16
	// CookieDatagramSize is the whole size of a Cookie datagram, the only
	// datagram the server sends to a source it has not verified.
	CookieDatagramSize = DatagramHeaderSize + CookieSize
	// MinHandshake is the least size of a Handshake datagram: a client
	// pads its handshakes to it, and a server answers none that is
	// shorter, so that whatever it answers a handshake with (a Cookie
	// datagram; a Reply and a Disconnect when it refuses the Hello) is
	// never larger than what it received.
	MinHandshake = 64
)

// DatagramKind is a datagram's first byte.
type DatagramKind uint8

// The datagram kinds. 0 is never valid.
const (
	// DatagramHandshake (client to server): an optional cookie, a Hello
	// frame and zero padding to at least MinHandshake bytes.
	DatagramHandshake DatagramKind = 1
	// DatagramCookie (server to client): the cookie the client must echo
	// in its next Handshake.
	DatagramCookie DatagramKind = 2
	// DatagramData (either way): exactly one frame of the reference
	// protocol.
	DatagramData DatagramKind = 3
)

// ErrDatagram: a datagram that is too short, of an unknown kind, with
// connection id 0, or (a Handshake) whose cookie length, Hello frame or
// padding is wrong. It is also ErrMalformed.
var ErrDatagram error = datagramError{}

type datagramError struct{}

func (datagramError) Error() string        { return "wire: malformed datagram" }
func (datagramError) Is(target error) bool { return target == ErrMalformed }

// AppendDatagramHeader appends a datagram header of kind k for
// connection id conn.
func AppendDatagramHeader(dst []byte, k DatagramKind, conn uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, byte(k)), conn)
}

// AppendHandshake appends a Handshake datagram for connection id conn:
// the cookie (nil for none, else exactly CookieSize bytes), a Hello frame
// of the current Version with token and label, and zero padding to
// MinHandshake bytes. A cookie of another size or hello fields longer than
// 255 bytes are refused with a *FieldError and dst is returned unchanged.
func AppendHandshake(dst []byte, conn uint64, cookie, token, label []byte) ([]byte, error) {
	if len(cookie) != 0 && len(cookie) != CookieSize {
		return dst, &FieldError{TypeHello, "cookie", len(cookie), CookieSize}
	}
	start := len(dst)
	out := AppendDatagramHeader(dst, DatagramHandshake, conn)
	out = append(out, byte(len(cookie)))
	out = append(out, cookie...)
	out, err := AppendHello(out, token, label)
	if err != nil {
		return dst[:start], err
	}
	for len(out)-start < MinHandshake {
		out = append(out, 0)
	}
	return out, nil
}

// AppendCookieDatagram appends a Cookie datagram carrying cookie
// (CookieSize bytes) for connection id conn.
func AppendCookieDatagram(dst []byte, conn uint64, cookie *[CookieSize]byte) []byte {
	return append(AppendDatagramHeader(dst, DatagramCookie, conn), cookie[:]...)
}

// ParseDatagram splits a datagram into its kind, its connection id and the
// rest. It does not allocate; rest is a view of b. A datagram shorter than
// its header, of an unknown kind or with connection id 0 is ErrDatagram; a
// Cookie datagram whose rest is not CookieSize bytes too.
func ParseDatagram(b []byte) (k DatagramKind, conn uint64, rest []byte, err error) {
	if len(b) < DatagramHeaderSize {
		return 0, 0, nil, ErrDatagram
	}
	k, conn, rest = DatagramKind(b[0]), binary.BigEndian.Uint64(b[1:]), b[DatagramHeaderSize:]
	switch {
	case conn == 0, k < DatagramHandshake || k > DatagramData:
		return k, conn, rest, ErrDatagram
	case k == DatagramCookie && len(rest) != CookieSize:
		return k, conn, rest, ErrDatagram
	}
	return k, conn, rest, nil
}

// ParseHandshake splits the rest of a Handshake datagram (after its
// header) into its cookie (empty when it has none) and its Hello frame,
// views of rest. It checks the layout only: the cookie's length byte is 0
// or CookieSize, a frame of type Hello that max allows follows it, and
// every byte after that frame is zero. It does not decode the Hello's body
// (Decode does, and reports a malformed one).
func ParseHandshake(rest []byte, max int) (cookie, hello []byte, err error) {
	if len(rest) < 1 {
		return nil, nil, ErrDatagram
	}
	cl := int(rest[0])
	if cl != 0 && cl != CookieSize || len(rest) < 1+cl {
		return nil, nil, ErrDatagram
	}
	cookie, rest = rest[1:1+cl:1+cl], rest[1+cl:]
	size, err := Peek(rest, max)
	if err != nil || size > len(rest) || Type(rest[LenSize]) != TypeHello {
		return nil, nil, ErrDatagram
	}
	for _, b := range rest[size:] {
		if b != 0 {
			return nil, nil, ErrDatagram
		}
	}
	return cookie, rest[:size:size], nil
}
