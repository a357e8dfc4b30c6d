// Package wire is the frame format of sluice's reference game protocol: the
// bytes that load-generator clients and the loopback server exchange. It
// encodes into caller buffers and decodes into views of the input, with no
// allocation on either path, and it validates a frame's length before it
// reads, buffers or allocates anything for the frame's body.
//
// # Frames
//
// A stream is a sequence of frames. Every integer is big-endian (network
// order). A frame is
//
//	offset  size  field
//	0       4     length  uint32: the number of bytes after this field (the
//	                      type byte and the body); 1 ≤ length ≤ max−4
//	4       1     type    one of the types below
//	5       L−1   body    by type, below
//
// The frame size is 4 + length. A receiver has a maximum frame size max
// (DefaultMaxFrame unless it says otherwise; MinFrameLimit ≤ max ≤
// MaxFrameLimit for a Framer): a header declaring a frame larger than max is
// rejected (ErrOversize) as soon as its four length bytes have arrived,
// before any of the body is waited for, buffered or allocated, and the
// stream cannot be resynchronised after it. A length of 0 (no type byte) is
// malformed.
//
// # Types and bodies
//
//	type  name        body                                          body size
//	1     Hello       version u8 | tokenLen u8 | token | labelLen u8 | label
//	                                                                3+t+l
//	2     Input       channel u8 | payload (the rest of the frame)   1+p
//	3     Request     kind u8 | id u64 | payload (the rest)          9+p
//	4     Reply       id u64 | status u8 | reason u8 | retryAfter u64  18
//	5     Disconnect  reason u8                                      1
//	6     Ping        timestamp u64                                  8
//	7     Pong        timestamp u64 (the ping's, echoed)             8
//
// Hello opens a session: version is the protocol version (Version; the
// server decides what to do with others), token identifies the account
// (opaque bytes, at most 255) and label is the client's population label
// (at most 255 bytes), which lets the server count its decisions per
// population. Input is replaceable client state (movement, ability use) on a
// channel; the server drops it silently when over a limit. Request is a
// command the client must hear about: the server answers every request with
// a Reply carrying the same id. Any non-zero id may be used, in any order
// (the reference server detects duplicates and replays exactly, whatever
// the ids: see core.Message.Request). Request id 0 is reserved: a Reply with id 0
// answers the connection's Hello once the server has checked it, accepted
// or refused (a refusal comes before the Disconnect); a Hello in a read the
// byte budget refuses is dropped unanswered, and a second Hello is checked
// as malformed. Reply status is StatusOK, StatusRejected (a limit or
// gate refused it; reason says which) or StatusFailed (the server's own
// handler refused it). reason is one byte: the numeric value of the
// server's stable reason enum (0 = none); retryAfter is in nanoseconds (0 =
// unknown or not applicable). Disconnect is sent by the server just before
// it closes the connection, with the reason. Ping carries a client
// timestamp that the Pong echoes unchanged.
//
// A body must have exactly the size its type gives: a frame whose body is
// too short or too long, whose hello lengths do not add up, whose reply
// status is unknown, or whose type is unknown is malformed (ErrMalformed,
// ErrUnknownType). A malformed frame is still well delimited: the decoder
// reports its size and skips it, and the stream stays in sync.
//
// # Datagrams
//
// Over UDP every datagram starts with a 9-byte header, kind u8 | conn u64,
// where conn is the connection id the client chose for its session
// (never 0). The server keys a session by its connection id and the
// source address together, so a datagram naming a session from any other
// address finds none. By kind, the rest is
//
//	kind  name       direction         rest
//	1     Handshake  client to server  cookieLen u8 (0 or 16) | cookie |
//	                                   a Hello frame | zero padding
//	2     Cookie     server to client  cookie (16 bytes)
//	3     Data       either            exactly one frame
//
// A Handshake is padded to at least MinHandshake (64) bytes, and a server
// drops a shorter one unanswered. Its answer to a Handshake without a
// cookie it accepts is a Cookie datagram of CookieDatagramSize (25) bytes;
// to one with a valid cookie (the source has proved it receives what is
// sent to it), the Hello's Reply and, when the Hello is refused, a
// Disconnect, 47 bytes in all as Data datagrams. No reply to a handshake
// is therefore ever larger than the handshake: the server cannot amplify.
// A cookie is the server's MAC of the source address and a time bucket: the
// server keeps no state for a source until it echoes a valid one (the
// cookie exchange of QUIC's Retry and DTLS's HelloVerifyRequest). A
// client resends its Handshake when no answer comes (datagrams are lost);
// a Handshake for a session that is already open is answered with the
// Hello's Reply again. Data datagrams from a client carry Input, Request
// and Ping frames, the server's carry Reply, Pong and Disconnect frames,
// one frame each: a datagram is never split or packed.
//
// # Decoding
//
// Decode reads the frame at the start of a buffer; Decoder walks a buffer
// holding several frames (one read from a socket often carries many); Framer
// reads from an io.Reader into one buffer of a fixed size chosen at
// construction, so a peer can never make it grow. Decoded byte fields (token,
// label, payload) are views into the input: copy them to keep them past the
// next read.
package wire
