// Package wsraw writes WebSocket frames by hand, for the load generator's
// hostile behaviours and the server's tests: what a well-kept client
// library refuses to send (a fragment flood, a header that declares more
// than any server accepts, pings without end) has to be framed here. It
// holds no state: its functions append to dst and return it, and are safe
// for concurrent use. Honest clients use github.com/gorilla/websocket.
package wsraw

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Opcodes (RFC 6455 §5.2).
const (
	OpContinuation = 0x0
	OpText         = 0x1
	OpBinary       = 0x2
	OpClose        = 0x8
	OpPing         = 0x9
	OpPong         = 0xA
)

// mask is the masking key of every frame: a client must mask, but any key
// does (RFC 6455 §5.3); a fixed one keeps runs reproducible.
var mask = [4]byte{0x5a, 0x17, 0xc3, 0x9e}

// AppendHeader appends a masked client frame's header declaring n payload
// bytes, with FIN set when fin is.
func AppendHeader(dst []byte, fin bool, op byte, n uint64) []byte {
	b0 := op & 0x0f
	if fin {
		b0 |= 0x80
	}
	switch {
	case n < 126:
		dst = append(dst, b0, 0x80|byte(n))
	case n <= 0xffff:
		dst = append(dst, b0, 0x80|126, byte(n>>8), byte(n))
	default:
		dst = append(dst, b0, 0x80|127)
		dst = binary.BigEndian.AppendUint64(dst, n)
	}
	return append(dst, mask[:]...)
}

// AppendFrame appends one masked client frame carrying payload.
func AppendFrame(dst []byte, fin bool, op byte, payload []byte) []byte {
	dst = AppendHeader(dst, fin, op, uint64(len(payload)))
	for i, b := range payload {
		dst = append(dst, b^mask[i&3])
	}
	return dst
}

// Request is the upgrade request a client sends for host (its Sec-WebSocket-Key
// is fixed: the server's answer to it is checked by nobody here).
func Request(host string) []byte {
	return []byte("GET / HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
}

// ErrRefused: the server answered the upgrade with another status than
// 101 Switching Protocols.
var ErrRefused = errors.New("wsraw: upgrade refused")

// Upgrade sends the upgrade request on nc and reads the response within
// d; it returns nil once the server switched protocols. What the server
// sends after its response (nothing, until the client speaks) is left
// unread.
func Upgrade(nc net.Conn, d time.Duration) error {
	nc.SetDeadline(time.Now().Add(d))
	defer nc.SetDeadline(time.Time{})
	if _, err := nc.Write(Request(nc.RemoteAddr().String())); err != nil {
		return err
	}
	// A reader of one byte at a time: nothing past the response's end is
	// taken from the socket.
	resp, err := http.ReadResponse(bufio.NewReaderSize(oneByte{nc}, 16), nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return fmt.Errorf("%w: %s", ErrRefused, resp.Status)
	}
	return nil
}

type oneByte struct{ nc net.Conn }

func (o oneByte) Read(p []byte) (int, error) { return o.nc.Read(p[:min(len(p), 1)]) }

// ServerReader returns a reader of the payloads of the data frames a
// server sends on r (server frames are not masked), in order, as one
// stream: what the server's binary messages carry. Control frames are
// skipped; a close frame reads as io.EOF.
func ServerReader(r io.Reader) io.Reader { return &serverReader{br: bufio.NewReaderSize(r, 4096)} }

type serverReader struct {
	br   *bufio.Reader
	left uint64 // payload bytes of the current data frame not yet read
}

func (s *serverReader) Read(p []byte) (int, error) {
	for s.left == 0 {
		var h [2]byte
		if _, err := io.ReadFull(s.br, h[:]); err != nil {
			return 0, err
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(s.br, b[:]); err != nil {
				return 0, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(s.br, b[:]); err != nil {
				return 0, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		switch op := h[0] & 0x0f; {
		case op == OpClose:
			return 0, io.EOF
		case op >= OpClose: // ping, pong: skipped
			if _, err := s.br.Discard(int(min(n, 125))); err != nil {
				return 0, err
			}
		default:
			s.left = n
		}
	}
	k, err := s.br.Read(p[:min(uint64(len(p)), s.left)])
	s.left -= uint64(k)
	return k, err
}
