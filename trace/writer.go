package trace

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/sluicedev/sluice/core"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Block bounds of a Writer: a block is cut at whichever comes first.
const (
	blockRecords = 1 << 14
	blockBytes   = 256 << 10
)

// Writer writes a trace: the header at once, then records in blocks of
// up to 16384 records (or 256 KiB before compression), in the format's
// version 2 (Version): each block's columns compressed with zstd, one
// frame a column, when it is full, and the end block on Close. Memory is
// one block's worth whatever the trace's length.
//
// Records must come in time order; a record earlier than the one before
// it is written at the earlier one's time (so that records from servers
// whose goroutines raced stay ordered). The zero value is not usable;
// make one with NewWriter. Not safe for concurrent use.
type Writer struct {
	w     *bufio.Writer
	enc   *zstd.Encoder
	cols  [numCols][]byte // the block's columns (see the package doc)
	raw   []byte          // the block's payload being built
	comp  []byte
	count int
	last  int64 // time of the previous record in the block
	prev  int64 // time of the previous record in the trace
	kinds map[string]uint64
	// lastKind and its index (0: not defined in this block) are a cache in
	// front of kinds: most messages are of the kind before them.
	lastKind  string
	lastIndex uint64
	nkinds    uint64
	written   int64 // records, all blocks
	bytes     int64 // bytes written so far
	err       error
	closed    bool
	pend      Record // a read held for the message it may carry
	hasPend   bool
}

// NewWriter writes h to w and returns a Writer for the records.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("trace: header: %w", err)
	}
	if len(hb) > maxHeader {
		return nil, fmt.Errorf("trace: header: %d bytes, more than %d", len(hb), maxHeader)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	tw := &Writer{w: bufio.NewWriterSize(w, 256<<10), enc: enc, kinds: map[string]uint64{}}
	var pre [13]byte
	copy(pre[:], magic)
	pre[8] = Version
	binary.LittleEndian.PutUint32(pre[9:], uint32(len(hb)))
	tw.put(pre[:])
	tw.put(hb)
	if tw.err != nil {
		return nil, tw.err
	}
	return tw, nil
}

func (w *Writer) put(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(b)
	w.bytes += int64(n)
	if err != nil {
		w.err = fmt.Errorf("trace: write: %w", err)
	}
}

// Records returns how many records have been written (kind definitions
// not counted).
func (w *Writer) Records() int64 { return w.written }

// Bytes returns how many bytes of the file have been written so far
// (blocks still being filled not counted).
func (w *Writer) Bytes() int64 { return w.bytes }

// ErrClosed is returned for a write to a closed Writer.
var ErrClosed = errors.New("trace: writer closed")

// Write adds one record.
//
// An accepted read followed at once by the one message it carried (the
// same session and time, the message's size the read's, the message
// charged by it) is written as one entry: the message with head bit 6
// set. Most frames of a game arrive one to a read, and this halves what
// they cost.
func (w *Writer) Write(r *Record) error {
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if r.Op == 0 || r.Op >= numOps || r.Op == opKind {
		return fmt.Errorf("trace: record %d: op %d is not a record", w.written, r.Op)
	}
	if w.hasPend {
		p := &w.pend
		w.hasPend = false
		if r.Op == OpMessage && r.Session == p.Session && max(r.Time, p.Time) == p.Time && r.Size == p.Size &&
			r.Flags&core.FlagCharged != 0 && w.count < blockRecords-1 {
			w.written++ // the read
			m := *r
			m.Time = p.Time // the read's: the message cannot be earlier
			return w.encode(&m, headOwnRead)
		}
		if err := w.encode(p, 0); err != nil {
			return err
		}
	}
	if r.Op == OpRead && r.Decision == (Decision{}) {
		w.pend, w.hasPend = *r, true
		w.pend.Time = max(r.Time, w.prev, 0)
		return nil
	}
	return w.encode(r, 0)
}

// headOwnRead marks a message entry that stands for an accepted read of
// the message's size, at its time, and the message.
const headOwnRead = 1 << 6

// flushPend writes a read held for the message that may follow it.
func (w *Writer) flushPend() {
	if w.hasPend {
		w.hasPend = false
		if err := w.encode(&w.pend, 0); err != nil && w.err == nil {
			w.err = err
		}
	}
}

// encode adds one entry, with extra bits in its head byte.
func (w *Writer) encode(r *Record, extra byte) error {
	t := max(r.Time, w.prev, 0)
	if r.IsMessage() {
		if r.Kind != "" && r.Kind != w.lastKind {
			w.lastKind, w.lastIndex = r.Kind, w.kinds[r.Kind]
		}
		if r.Kind != "" && w.lastIndex == 0 {
			if !validKindName(r.Kind) {
				return fmt.Errorf("trace: record %d: kind %q is not a kind name", w.written, r.Kind)
			}
			if w.nkinds == maxKinds {
				w.cut()
			}
			w.nkinds++
			w.kinds[r.Kind] = w.nkinds
			w.lastKind, w.lastIndex = r.Kind, w.nkinds
			w.cols[colHead] = append(w.cols[colHead], byte(opKind))
			w.putTime(uint64(t - w.last))
			w.last = t
			w.cols[colOther] = binary.AppendUvarint(w.cols[colOther], w.nkinds)
			w.cols[colOther] = appendString(w.cols[colOther], r.Kind)
			w.count++
		}
	}
	if (r.Op == OpLabel && len(r.Group) > maxString) || r.Label >= numLabels {
		return fmt.Errorf("trace: record %d: label: group longer than %d bytes or label %d undefined", w.written, maxString, r.Label)
	}
	head := byte(r.Op) | extra
	if r.IsMessage() {
		head |= byte(r.Flags&3) << 4
	}
	c := &w.cols
	c[colHead] = append(c[colHead], head)
	w.putTime(uint64(t - w.last))
	if r.Op != OpLost {
		c[colSession] = binary.AppendUvarint(c[colSession], r.Session)
	}
	switch r.Op {
	case OpOpen:
		c[colDecision] = append(c[colDecision], r.Decision.byte())
		o := c[colOther]
		switch a := r.Addr.Addr(); {
		case r.AddrHash != 0:
			o = append(o, 8)
			o = binary.BigEndian.AppendUint64(o, r.AddrHash)
		case !a.IsValid():
			o = append(o, 0)
		case a.Is4():
			v := a.As4()
			o = append(o, 4)
			o = append(o, v[:]...)
			o = binary.BigEndian.AppendUint16(o, r.Addr.Port())
		default:
			v := a.As16()
			o = append(o, 6)
			o = append(o, v[:]...)
			o = binary.BigEndian.AppendUint16(o, r.Addr.Port())
		}
		c[colOther] = o
	case OpAuth:
		c[colDecision] = append(c[colDecision], r.Decision.byte())
		c[colOther] = binary.AppendUvarint(c[colOther], r.Account)
	case OpRead:
		c[colDecision] = append(c[colDecision], r.Decision.byte())
		c[colKind] = binary.AppendUvarint(c[colKind], uint64(r.Size))
	case OpMessage, OpUnchecked:
		c[colDecision] = append(c[colDecision], r.Decision.byte())
		var k uint64
		if r.Kind != "" {
			k = w.lastIndex
		}
		c[colKind] = binary.AppendUvarint(c[colKind], k)
		c[colKind] = binary.AppendUvarint(c[colKind], uint64(r.Size))
		c[colRequest] = binary.AppendUvarint(c[colRequest], r.Request)
		c[colMatch] = binary.AppendUvarint(c[colMatch], r.Match)
	case OpDone:
		c[colRequest] = binary.AppendUvarint(c[colRequest], r.Request)
	case OpClose:
	case OpLabel:
		c[colOther] = append(c[colOther], byte(r.Label))
		c[colOther] = appendString(c[colOther], r.Group)
	case OpLost:
		c[colOther] = binary.AppendUvarint(c[colOther], r.Lost)
	}
	w.last, w.prev = t, t
	w.count++
	w.written++
	if w.count >= blockRecords || w.rawLen() >= blockBytes {
		w.cut()
	}
	return w.err
}

// putTime adds an entry's time delta to the time columns: its four bytes,
// little-endian, one to a column, or 0xffffffff and the delta as a
// uvarint in the other column when it does not fit.
func (w *Writer) putTime(dt uint64) {
	v := uint32(dt)
	if dt >= wideTime {
		v = wideTime
		w.cols[colOther] = binary.AppendUvarint(w.cols[colOther], dt)
	}
	w.cols[colTime0] = append(w.cols[colTime0], byte(v))
	w.cols[colTime1] = append(w.cols[colTime1], byte(v>>8))
	w.cols[colTime2] = append(w.cols[colTime2], byte(v>>16))
	w.cols[colTime3] = append(w.cols[colTime3], byte(v>>24))
}

// rawLen is the size of the block's columns so far.
func (w *Writer) rawLen() int {
	n := 0
	for i := range w.cols {
		n += len(w.cols[i])
	}
	return n
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// cut compresses and writes the block so far and starts the next.
func (w *Writer) cut() {
	if w.count == 0 || w.err != nil {
		return
	}
	// Each column its own zstd frame: a column's bytes are alike (time
	// bytes of one significance, sessions, sizes), and a frame of one
	// column compresses them better than one frame of them all.
	w.raw = w.raw[:0]
	for i := range w.cols {
		col := w.cols[i]
		w.raw = binary.AppendUvarint(w.raw, uint64(len(col)))
		if len(col) == 0 {
			continue
		}
		w.comp = w.enc.EncodeAll(col, w.comp[:0])
		w.raw = binary.AppendUvarint(w.raw, uint64(len(w.comp)))
		w.raw = append(w.raw, w.comp...)
	}
	var h [blockHead]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(w.raw)))
	binary.LittleEndian.PutUint32(h[4:], uint32(w.rawLen()))
	binary.LittleEndian.PutUint32(h[8:], uint32(w.count))
	binary.LittleEndian.PutUint32(h[12:], crc32.Checksum(w.raw, castagnoli))
	w.put(h[:])
	w.put(w.raw)
	for i := range w.cols {
		w.cols[i] = w.cols[i][:0]
	}
	w.count, w.last = 0, 0
	clear(w.kinds)
	w.nkinds = 0
	w.lastKind, w.lastIndex = "", 0
}

// Flush writes the block so far (a shorter block) and flushes the
// underlying writer, so that a reader of the file sees every record
// written until now.
func (w *Writer) Flush() error {
	if w.closed {
		return ErrClosed
	}
	w.flushPend()
	w.cut()
	if w.err == nil {
		if err := w.w.Flush(); err != nil {
			w.err = fmt.Errorf("trace: write: %w", err)
		}
	}
	return w.err
}

// Close writes the last block and the end block and flushes. It does not
// close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.flushPend()
	w.cut()
	w.put(make([]byte, blockHead))
	if w.err == nil {
		if err := w.w.Flush(); err != nil {
			w.err = fmt.Errorf("trace: write: %w", err)
		}
	}
	w.closed = true
	w.enc.Close()
	return w.err
}
