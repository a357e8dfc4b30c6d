package wsraw

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/netip"
	"time"

	"github.com/gorilla/websocket"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// Conn is an honest client's WebSocket connection seen as a byte stream,
// so that what reads and writes frames of the reference protocol over TCP
// does so over WebSocket unchanged: Write sends each whole frame of the
// reference protocol in its bytes as one binary message of one frame, all
// of them in one write to the socket (bytes that are not a whole frame,
// as some hostile behaviours write, go as one message of their own: to
// the server, a malformed frame); Read returns the
// payloads of the server's messages in order. One goroutine may read
// while another writes (gorilla's rule); Close may be called from any.
type Conn struct {
	ws   *websocket.Conn
	r    io.Reader // the message being read; nil between messages
	wbuf []byte    // the frames of one Write
}

// Dial upgrades a connection to the WebSocket server at addr (ws://addr/),
// dialled from src when it is valid, within timeout.
func Dial(ctx context.Context, addr netip.AddrPort, src netip.Addr, timeout time.Duration) (*Conn, error) {
	nd := net.Dialer{Timeout: timeout}
	if src.IsValid() {
		nd.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0))
	}
	d := websocket.Dialer{
		NetDialContext:   nd.DialContext,
		HandshakeTimeout: timeout,
		ReadBufferSize:   4096,
		WriteBufferSize:  4096,
	}
	ws, resp, err := d.DialContext(ctx, "ws://"+addr.String()+"/", nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(wire.MaxFrameLimit)
	return &Conn{ws: ws}, nil
}

// Read reads the server's messages' bytes. A close frame, or the end of
// the socket, reads as io.EOF.
func (c *Conn) Read(p []byte) (int, error) {
	for {
		if c.r == nil {
			_, r, err := c.ws.NextReader()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					return 0, io.EOF
				}
				return 0, err
			}
			c.r = r
		}
		n, err := c.r.Read(p)
		if err == io.EOF {
			c.r = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

// Write sends p as messages, one per whole reference frame.
func (c *Conn) Write(p []byte) (int, error) {
	// Every message of p goes in one frame and all of them in one write
	// to the socket, as the same frames go over TCP in one write: the
	// server reads them as they arrive, so a write split into a system
	// call per message (gorilla's writer) would reach it in more, smaller
	// reads, each with its own minimum charge on the byte budget, and
	// gorilla's client splits a message longer than its write buffer into
	// several frames, each with a header of its own. One frame per message
	// and one write per call is what the sim models (loadgen/sim,
	// sim_ws.go). The socket's Write is atomic against gorilla's own
	// (control frames from the reader: a close's answer), each holding
	// the socket's write lock for the whole of its bytes.
	c.wbuf = c.wbuf[:0]
	for off := 0; off < len(p); {
		size, err := wire.Peek(p[off:], math.MaxInt32)
		if err != nil || size > len(p)-off {
			size = len(p) - off
		}
		c.wbuf = AppendFrame(c.wbuf, true, OpBinary, p[off:off+size])
		off += size
	}
	if _, err := c.ws.NetConn().Write(c.wbuf); err != nil {
		return 0, err
	}
	if cap(c.wbuf) > maxKeptBuffer {
		c.wbuf = nil
	}
	return len(p), nil
}

// maxKeptBuffer is the largest write buffer a Conn keeps between writes:
// a flood's batch of large frames is not held for the connection's life.
const maxKeptBuffer = 64 << 10

// WS returns the underlying connection (to send control frames).
func (c *Conn) WS() *websocket.Conn { return c.ws }

func (c *Conn) Close() error                      { return c.ws.NetConn().Close() }
func (c *Conn) LocalAddr() net.Addr               { return c.ws.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr              { return c.ws.RemoteAddr() }
func (c *Conn) SetReadDeadline(t time.Time) error { return c.ws.SetReadDeadline(t) }
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.ws.SetWriteDeadline(t) // for gorilla's own writes
	return c.ws.NetConn().SetWriteDeadline(t)
}
func (c *Conn) SetDeadline(t time.Time) error {
	c.ws.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}
