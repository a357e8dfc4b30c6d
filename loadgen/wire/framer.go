package wire

import (
	"errors"
	"fmt"
	"io"
)

// Decoder walks a buffer holding zero or more frames, such as what one read
// from a socket returned, and decodes them one by one into views of the
// buffer. Set Max (≤ 0 means DefaultMaxFrame) and call Reset with the
// buffer; the zero value decodes an empty buffer. It never allocates. A
// Decoder is not safe for concurrent use.
type Decoder struct {
	Max int
	buf []byte
	off int
}

// Reset makes the decoder walk buf from its start.
func (d *Decoder) Reset(buf []byte) { d.buf, d.off = buf, 0 }

// Next decodes the next frame into m. It returns what Decode returns for
// that frame, except that it returns io.EOF when the buffer is used up
// exactly. After ErrIncomplete, Rest holds the partial frame; after
// ErrOversize, Next keeps returning it (the rest cannot be delimited);
// after ErrMalformed the frame is skipped and Next can be called again.
func (d *Decoder) Next(m *Msg) error {
	if d.off == len(d.buf) {
		*m = Msg{}
		return io.EOF
	}
	n, err := Decode(d.buf[d.off:], d.Max, m)
	d.off += n
	return err
}

// Rest returns the bytes not consumed yet.
func (d *Decoder) Rest() []byte { return d.buf[d.off:] }

// Consumed returns the number of bytes consumed since Reset.
func (d *Decoder) Consumed() int { return d.off }

// ErrBufferSize is returned by NewFramer for a maximum frame size or
// buffer size out of range.
var ErrBufferSize = errors.New("wire: framer size out of range")

// Framer reads frames from an io.Reader through one buffer whose size is
// fixed at construction (at least the maximum frame size), so no peer can
// make it grow: a frame larger than the maximum is refused from its header
// alone. Make one with NewFramer; the zero value is not usable. A Framer is
// not safe for concurrent use.
//
// A server that charges bytes per read and tokens per frame calls Fill once
// per read and then Next until ErrIncomplete; ReadMsg does both for a client
// that only wants messages. The views in a decoded Msg are valid until the
// next Fill (or ReadMsg), which may move the buffered bytes.
type Framer struct {
	r          io.Reader
	max        int
	buf        []byte
	start, end int   // buf[start:end] is buffered and not yet decoded
	err        error // sticky: a read error, or ErrOversize
}

// NewFramer returns a framer reading r with the given maximum frame size
// (MinFrameLimit ≤ maxFrame ≤ MaxFrameLimit) and buffer size (0 means
// 2×maxFrame; otherwise maxFrame ≤ bufSize ≤ 2×MaxFrameLimit). The buffer
// is allocated here, once.
func NewFramer(r io.Reader, maxFrame, bufSize int) (*Framer, error) {
	if maxFrame < MinFrameLimit || maxFrame > MaxFrameLimit {
		return nil, fmt.Errorf("%w: max frame %d not in [%d, %d]", ErrBufferSize, maxFrame, MinFrameLimit, MaxFrameLimit)
	}
	if bufSize == 0 {
		bufSize = 2 * maxFrame
	}
	if bufSize < maxFrame || bufSize > 2*MaxFrameLimit {
		return nil, fmt.Errorf("%w: buffer %d not in [%d, %d]", ErrBufferSize, bufSize, maxFrame, 2*MaxFrameLimit)
	}
	return &Framer{r: r, max: maxFrame, buf: make([]byte, bufSize)}, nil
}

// Max returns the maximum frame size.
func (f *Framer) Max() int { return f.max }

// Cap returns the buffer's size, which never changes.
func (f *Framer) Cap() int { return len(f.buf) }

// Buffered returns the number of bytes read but not yet decoded.
func (f *Framer) Buffered() int { return f.end - f.start }

// Err returns the sticky error (a read error, or ErrOversize), if any.
func (f *Framer) Err() error { return f.err }

// Fill reads once from the reader into the free part of the buffer, first
// moving the undecoded bytes to its front, and returns the number of bytes
// read. It returns the sticky error if there is one; a read error becomes
// sticky once the bytes read with it are returned. Since every frame fits
// the buffer, there is always room to read when Next has returned
// ErrIncomplete.
func (f *Framer) Fill() (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.start > 0 {
		f.end = copy(f.buf, f.buf[f.start:f.end])
		f.start = 0
	}
	if f.end == len(f.buf) {
		// Only reachable when the caller fills again without decoding.
		return 0, nil
	}
	n, err := f.r.Read(f.buf[f.end:])
	if n < 0 || n > len(f.buf)-f.end {
		n, err = 0, io.ErrShortBuffer
	}
	f.end += n
	if err != nil {
		f.err = err
	}
	return n, err
}

// Next decodes the next buffered frame into m without reading. It returns
// ErrIncomplete when the buffered bytes hold no whole frame (call Fill),
// and otherwise what Decode returns; after ErrOversize every later call
// returns ErrOversize.
func (f *Framer) Next(m *Msg) error {
	if f.err == ErrOversize {
		*m = Msg{}
		return ErrOversize
	}
	n, err := Decode(f.buf[f.start:f.end], f.max, m)
	f.start += n
	if err == ErrOversize {
		f.err = err
	}
	return err
}

// ReadMsg returns the next frame, reading as needed. It returns nil or a
// frame error as Next does; io.EOF at a clean end of stream;
// io.ErrUnexpectedEOF when the stream ends inside a frame; and any other
// read error (io.ErrNoProgress after 100 empty reads in a row).
func (f *Framer) ReadMsg(m *Msg) error {
	for empty := 0; ; {
		err := f.Next(m)
		if err != ErrIncomplete {
			return err
		}
		n, rerr := f.Fill()
		if n == 0 && rerr == nil {
			if empty++; empty == 100 {
				return io.ErrNoProgress
			}
			continue
		}
		empty = 0
		if rerr != nil && f.end > f.start {
			// Decode what the last read brought before reporting the error.
			if err := f.Next(m); err != ErrIncomplete {
				return err
			}
			if rerr == io.EOF {
				return io.ErrUnexpectedEOF
			}
		}
		if rerr != nil {
			return rerr
		}
	}
}
