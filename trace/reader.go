package trace

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/netip"

	"github.com/klauspost/compress/zstd"

	"github.com/sluicedev/sluice/core"
)

// Causes of a FormatError, for errors.Is.
var (
	ErrTruncated   = errors.New("truncated")
	ErrCorrupt     = errors.New("corrupt")
	ErrVersion     = errors.New("unsupported version")
	ErrUnknownKind = errors.New("unknown kind")
)

// FormatError is bad input found by a Reader: where (the byte offset of
// the header or block, the block's number and the number of the record,
// counted from 0 over the file, kind definitions included) and what.
type FormatError struct {
	Offset int64 // byte offset of the header or block holding the damage
	Block  int   // block number from 0; -1 for the file's header
	Record int64 // number of the first record not read
	Msg    string
	Err    error // ErrTruncated, ErrCorrupt, ErrVersion or ErrUnknownKind
}

func (e *FormatError) Error() string {
	where := fmt.Sprintf("byte %d (header)", e.Offset)
	if e.Block >= 0 {
		where = fmt.Sprintf("byte %d (block %d, record %d)", e.Offset, e.Block, e.Record)
	}
	return fmt.Sprintf("trace: %s: %v: %s", where, e.Err, e.Msg)
}

func (e *FormatError) Unwrap() error { return e.Err }

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// Partial makes damage end the trace instead of failing it: Next
	// returns io.EOF at a truncation or a damaged header, skips a block
	// whose payload is damaged but whose header is whole, and Damage says
	// what was lost.
	Partial bool
}

// Damage is what a Partial reader lost.
type Damage struct {
	// Errs are the damage found, in order.
	Errs []*FormatError
	// LostRecords counts the records of the blocks skipped or cut short
	// that their headers announced (a truncated block header announces
	// none).
	LostRecords int64
	// LostBytes counts the bytes of the file that were not read as records.
	LostBytes int64
}

func (d *Damage) String() string {
	if d == nil || len(d.Errs) == 0 {
		return "no damage"
	}
	return fmt.Sprintf("%d records and %d bytes lost; first: %v", d.LostRecords, d.LostBytes, d.Errs[0])
}

// Reader reads a trace one record at a time, decompressing one block at a
// time: its memory is one block's, whatever the trace's length. The zero
// value is not usable; make one with NewReader. Not safe for concurrent
// use.
type Reader struct {
	r       *bufio.Reader
	dec     *zstd.Decoder
	opts    ReaderOptions
	header  Header
	off     int64 // bytes consumed
	block   int   // the block being read
	nblocks int
	bstart  int64 // offset of the current block
	record  int64 // records read (kind definitions included)
	version byte
	comp    []byte
	raw     []byte
	one     cursor           // version 1: the block's entries, in a row
	cols    [numCols]cursor  // version 2: the block's columns
	cs      [numCols]*cursor // where each field is read from: one, or its column
	bad     string           // the first field of the entry that did not fit
	entry   int              // entries read in the block
	left    int              // records left in the block
	t       int64
	kinds   []string
	rec     Record
	held    Record // the message of an own-read entry, after its read
	isHeld  bool
	done    bool
	err     error
	damage  Damage
}

// NewReader reads the header from r and returns a Reader for its records.
func NewReader(r io.Reader, opts ReaderOptions) (*Reader, error) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxRawBlock))
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	tr := &Reader{r: bufio.NewReaderSize(r, 256<<10), dec: dec, opts: opts}
	var pre [13]byte
	if n, err := io.ReadFull(tr.r, pre[:]); err != nil {
		return nil, tr.headErr(0, ErrTruncated, fmt.Sprintf("%d of the 13 bytes of magic, version and header length", n))
	}
	if string(pre[:8]) != magic {
		return nil, tr.headErr(0, ErrCorrupt, fmt.Sprintf("magic %q is not %q: not a sluice trace", pre[:8], magic))
	}
	if pre[8] != 1 && pre[8] != Version {
		return nil, tr.headErr(8, ErrVersion, fmt.Sprintf("version %d; this reader reads versions 1 to %d", pre[8], Version))
	}
	tr.version = pre[8]
	for i := range tr.cs {
		tr.cs[i] = &tr.cols[i]
		if tr.version == 1 {
			tr.cs[i] = &tr.one
		}
	}
	n := binary.LittleEndian.Uint32(pre[9:])
	if n > maxHeader {
		return nil, tr.headErr(9, ErrCorrupt, fmt.Sprintf("header length %d is over %d", n, maxHeader))
	}
	hb := make([]byte, n)
	if got, err := io.ReadFull(tr.r, hb); err != nil {
		return nil, tr.headErr(13, ErrTruncated, fmt.Sprintf("%d of the header's %d bytes", got, n))
	}
	if err := json.Unmarshal(hb, &tr.header); err != nil {
		return nil, tr.headErr(13, ErrCorrupt, "header: "+err.Error())
	}
	tr.off = 13 + int64(n)
	return tr, nil
}

func (r *Reader) headErr(off int64, cause error, msg string) error {
	return &FormatError{Offset: off, Block: -1, Msg: msg, Err: cause}
}

// Header returns the trace's header.
func (r *Reader) Header() Header { return r.header }

// Damage returns what a Partial reader has lost so far (nil if nothing).
func (r *Reader) Damage() *Damage {
	if len(r.damage.Errs) == 0 {
		return nil
	}
	d := r.damage
	return &d
}

// Offset returns the number of bytes read so far.
func (r *Reader) Offset() int64 { return r.off }

// Next returns the next record, valid until the next call, or io.EOF
// after the last one. Bad input is a *FormatError (or, with Partial, the
// end of what could be read: see Damage).
func (r *Reader) Next() (*Record, error) {
	if r.isHeld {
		r.isHeld = false
		r.rec = r.held
		return &r.rec, nil
	}
	for {
		if r.err != nil {
			return nil, r.err
		}
		if r.left == 0 {
			if r.done {
				return nil, io.EOF
			}
			if err := r.nextBlock(); err != nil {
				r.fail(err)
				continue
			}
			continue
		}
		rec, err := r.decode()
		if err != nil {
			r.fail(err)
			continue
		}
		if rec != nil {
			return rec, nil
		}
	}
}

// fail ends reading with err or, in partial mode, records it and skips
// what it damaged.
func (r *Reader) fail(err error) {
	fe, ok := err.(*FormatError)
	if !ok || !r.opts.Partial {
		r.err = err
		return
	}
	r.damage.Errs = append(r.damage.Errs, fe)
	r.damage.LostRecords += int64(r.left)
	r.record += int64(r.left)
	r.left = 0
	if fe.Err == ErrTruncated || r.done {
		// Nothing after it can be found: count the rest and stop.
		n, _ := io.Copy(io.Discard, r.r)
		r.damage.LostBytes += n + (r.off - r.bstart)
		r.done = true
		r.err = io.EOF
		return
	}
	r.damage.LostBytes += r.off - r.bstart
}

func (r *Reader) errAt(cause error, format string, args ...any) *FormatError {
	return &FormatError{Offset: r.bstart, Block: r.block, Record: r.record, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// nextBlock reads and decompresses the next block (or the end block).
func (r *Reader) nextBlock() error {
	r.bstart = r.off
	r.block = r.nblocks
	r.nblocks++
	var h [blockHead]byte
	n, err := io.ReadFull(r.r, h[:])
	r.off += int64(n)
	if err != nil {
		return r.errAt(ErrTruncated, "the file ends inside a block header (%d of %d bytes); the end block is missing", n, blockHead)
	}
	plen := binary.LittleEndian.Uint32(h[0:])
	rawLen := binary.LittleEndian.Uint32(h[4:])
	count := binary.LittleEndian.Uint32(h[8:])
	sum := binary.LittleEndian.Uint32(h[12:])
	if plen == 0 && rawLen == 0 && count == 0 && sum == 0 {
		if _, err := r.r.ReadByte(); err != io.EOF {
			r.done = true
			return r.errAt(ErrCorrupt, "bytes after the end block")
		}
		r.done = true
		return nil
	}
	if rawLen > maxRawBlock || count == 0 || uint64(count) > uint64(rawLen) || plen > maxRawBlock+maxRawBlock/8 {
		// The header itself is bad: where the next block starts is unknown.
		r.done = true
		return r.errAt(ErrCorrupt, "block header (payload %d, raw %d, records %d) is impossible", plen, rawLen, count)
	}
	r.left = int(count)
	if cap(r.comp) < int(plen) {
		r.comp = make([]byte, plen)
	}
	r.comp = r.comp[:plen]
	n, err = io.ReadFull(r.r, r.comp)
	r.off += int64(n)
	if err != nil {
		return r.errAt(ErrTruncated, "the file ends inside block %d's payload (%d of %d bytes)", r.block, n, plen)
	}
	if got := crc32.Checksum(r.comp, castagnoli); got != sum {
		return r.errAt(ErrCorrupt, "checksum %08x, the block header says %08x", got, sum)
	}
	r.t, r.entry, r.bad = 0, 0, ""
	r.kinds = r.kinds[:0]
	if r.version == 1 {
		raw, err := r.dec.DecodeAll(r.comp, r.raw[:0])
		if err != nil {
			return r.errAt(ErrCorrupt, "payload does not decompress: %v", err)
		}
		if len(raw) != int(rawLen) {
			return r.errAt(ErrCorrupt, "payload decompresses to %d bytes, the block header says %d", len(raw), rawLen)
		}
		r.raw = raw
		r.one = cursor{b: raw, bad: &r.bad}
		return nil
	}
	return r.columns(rawLen, count)
}

// columns decompresses a version 2 block's columns.
func (r *Reader) columns(rawLen, count uint32) error {
	p := cursor{b: r.comp, bad: &r.bad}
	var ends [numCols]int
	raw := r.raw[:0]
	for i := range numCols {
		n := p.uv("column length")
		if n > uint64(rawLen) {
			return r.errAt(ErrCorrupt, "column %d: %d bytes, more than the block's %d", i, n, rawLen)
		}
		if n > 0 {
			plen := p.uv("column payload length")
			frame := p.take(int(min(plen, uint64(len(p.b)))), "column payload")
			if r.bad != "" {
				return r.errAt(ErrCorrupt, "column %d: %s", i, r.bad)
			}
			start := len(raw)
			var err error
			if raw, err = r.dec.DecodeAll(frame, raw); err != nil {
				return r.errAt(ErrCorrupt, "column %d does not decompress: %v", i, err)
			}
			if uint64(len(raw)-start) != n {
				return r.errAt(ErrCorrupt, "column %d decompresses to %d bytes, its length says %d", i, len(raw)-start, n)
			}
		}
		if r.bad != "" {
			return r.errAt(ErrCorrupt, "column %d: %s", i, r.bad)
		}
		ends[i] = len(raw)
		if len(raw) > int(rawLen) {
			return r.errAt(ErrCorrupt, "columns of more than the block header's %d bytes", rawLen)
		}
	}
	if p.i != len(p.b) {
		return r.errAt(ErrCorrupt, "%d bytes after the block's last column", len(p.b)-p.i)
	}
	if len(raw) != int(rawLen) {
		return r.errAt(ErrCorrupt, "columns of %d bytes, the block header says %d", len(raw), rawLen)
	}
	r.raw = raw
	start := 0
	for i := range r.cols {
		r.cols[i] = cursor{b: raw[start:ends[i]:ends[i]], bad: &r.bad}
		start = ends[i]
	}
	for i := colHead; i <= colTime3; i++ {
		if len(r.cols[i].b) != int(count) {
			return r.errAt(ErrCorrupt, "column %d holds %d bytes for the block's %d entries", i, len(r.cols[i].b), count)
		}
	}
	return nil
}

// cursor reads an entry's fields; the first that does not fit marks it
// bad (and names the field), and every later read gives 0.
type cursor struct {
	b   []byte
	i   int
	bad *string // shared by a block's cursors
}

func (c *cursor) uv(field string) uint64 {
	if c.i < len(c.b) && c.b[c.i] < 0x80 { // one byte: most fields
		v := uint64(c.b[c.i])
		c.i++
		return v
	}
	v, n := binary.Uvarint(c.b[min(c.i, len(c.b)):])
	if n <= 0 {
		if *c.bad == "" {
			*c.bad = "a bad varint in " + field
		}
		c.i = len(c.b)
		return 0
	}
	c.i += n
	return v
}

func (c *cursor) take(n int, field string) []byte {
	if len(c.b)-c.i < n {
		if *c.bad == "" {
			*c.bad = "the block ends inside " + field
		}
		c.i = len(c.b)
		return nil
	}
	p := c.b[c.i : c.i+n]
	c.i += n
	return p
}

func (c *cursor) byte1(field string) byte {
	if p := c.take(1, field); p != nil {
		return p[0]
	}
	return 0
}

func (c *cursor) str(field string) string {
	n := c.uv(field + " length")
	if n > maxString {
		if *c.bad == "" {
			*c.bad = fmt.Sprintf("%s is %d bytes, over %d", field, n, maxString)
		}
		return ""
	}
	return string(c.take(int(n), field))
}

// decode decodes one record of the block; nil for a kind definition.
func (r *Reader) decode() (*Record, error) {
	cs := &r.cs
	if cs[colHead].i >= len(cs[colHead].b) {
		return nil, r.errAt(ErrCorrupt, "the block ends after %d of its records", r.record)
	}
	head := cs[colHead].byte1("head")
	op := Op(head & 0xf)
	flags := core.MessageFlags(head>>4) & 3
	ownRead := head&headOwnRead != 0
	if op == 0 || op >= numOps || head&0x80 != 0 || (flags != 0 && op != OpMessage && op != OpUnchecked) ||
		(ownRead && (op != OpMessage || flags&core.FlagCharged == 0)) {
		return nil, r.errAt(ErrCorrupt, "record %d: head byte %#x is no operation", r.record, head)
	}
	var dt uint64
	if r.version == 1 {
		dt = r.one.uv("time")
	} else {
		e := r.entry
		dt = uint64(r.cols[colTime0].b[e]) | uint64(r.cols[colTime1].b[e])<<8 | uint64(r.cols[colTime2].b[e])<<16 | uint64(r.cols[colTime3].b[e])<<24
		if dt == wideTime {
			dt = cs[colOther].uv("time")
		}
	}
	rec := &r.rec
	*rec = Record{Op: op, Time: r.t + int64(dt), Flags: flags}
	if rec.Time < r.t {
		return nil, r.errAt(ErrCorrupt, "record %d: time overflows", r.record)
	}
	if op != OpLost && op != opKind {
		rec.Session = cs[colSession].uv("session")
	}
	var badDecision error
	decision := func() {
		d, err := decisionOf(cs[colDecision].byte1("decision"))
		if err != nil && badDecision == nil {
			badDecision = err
		}
		rec.Decision = d
	}
	switch op {
	case OpOpen:
		decision()
		switch form := cs[colOther].byte1("address form"); form {
		case 0:
		case 4:
			if p := cs[colOther].take(6, "address"); p != nil {
				rec.Addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte(p[:4])), binary.BigEndian.Uint16(p[4:]))
			}
		case 6:
			if p := cs[colOther].take(18, "address"); p != nil {
				rec.Addr = netip.AddrPortFrom(netip.AddrFrom16([16]byte(p[:16])), binary.BigEndian.Uint16(p[16:]))
			}
		case 8:
			if p := cs[colOther].take(8, "address hash"); p != nil {
				rec.AddrHash = binary.BigEndian.Uint64(p)
			}
		default:
			if r.bad == "" {
				return nil, r.errAt(ErrCorrupt, "record %d (open): address form %d is undefined", r.record, form)
			}
		}
	case OpAuth:
		decision()
		rec.Account = cs[colOther].uv("account")
	case OpRead:
		decision()
		rec.Size = uint32(min(cs[colKind].uv("size"), 1<<32-1))
	case OpMessage, OpUnchecked:
		decision()
		k := cs[colKind].uv("kind")
		if r.bad == "" && k > uint64(len(r.kinds)) {
			return nil, r.errAt(ErrUnknownKind, "record %d (%v): kind %d is not defined in this block (it defines %d)", r.record, op, k, len(r.kinds))
		}
		if k > 0 && k <= uint64(len(r.kinds)) {
			rec.Kind = r.kinds[k-1]
		}
		rec.Size = uint32(min(cs[colKind].uv("size"), 1<<32-1))
		rec.Request = cs[colRequest].uv("request")
		rec.Match = cs[colMatch].uv("match")
	case OpDone:
		rec.Request = cs[colRequest].uv("request")
	case OpClose:
	case OpLabel:
		rec.Label = Label(cs[colOther].byte1("label"))
		if r.bad == "" && rec.Label >= numLabels {
			return nil, r.errAt(ErrCorrupt, "record %d (label): label %d is undefined", r.record, rec.Label)
		}
		rec.Group = cs[colOther].str("group")
	case opKind:
		k := cs[colOther].uv("kind index")
		name := cs[colOther].str("kind name")
		if r.bad == "" && (k != uint64(len(r.kinds))+1 || !validKindName(name)) {
			return nil, r.errAt(ErrCorrupt, "record %d (kind): definition %d %q out of order or not a name", r.record, k, name)
		}
		if r.bad == "" {
			r.kinds = append(r.kinds, name)
		}
	case OpLost:
		rec.Lost = cs[colOther].uv("count")
	}
	if r.bad != "" {
		return nil, r.errAt(ErrCorrupt, "record %d (%v): %s", r.record, op, r.bad)
	}
	if badDecision != nil {
		return nil, r.errAt(ErrCorrupt, "record %d (%v): %v", r.record, op, badDecision)
	}
	r.t = rec.Time
	r.entry++
	r.record++
	r.left--
	if r.left == 0 {
		if err := r.ended(); err != nil {
			return nil, err
		}
	}
	if op == opKind {
		return nil, nil
	}
	if ownRead {
		// The read first, then the message.
		r.held, r.isHeld = *rec, true
		*rec = Record{Op: OpRead, Time: rec.Time, Session: rec.Session, Size: rec.Size}
	}
	return rec, nil
}

// ended checks that the block's last entry used up its bytes.
func (r *Reader) ended() error {
	if r.version == 1 {
		if n := len(r.one.b) - r.one.i; n != 0 {
			return r.errAt(ErrCorrupt, "%d bytes after the block's last record", n)
		}
		return nil
	}
	for i := range r.cols {
		if i >= colTime0 && i <= colTime3 {
			continue // read by entry number, not by cursor
		}
		if n := len(r.cols[i].b) - r.cols[i].i; n != 0 {
			return r.errAt(ErrCorrupt, "%d bytes after the block's last record in column %d", n, i)
		}
	}
	return nil
}
