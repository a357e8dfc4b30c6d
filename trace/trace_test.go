package trace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sluicedev/sluice/core"
)

var testHeader = Header{Recorder: "test", Origin: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), PolicyDigest: "sha256:00"}

// sample returns n records of every op, in time order.
func sample(n int) []Record {
	var out []Record
	t := int64(0)
	for i := 0; i < n; i++ {
		s := uint64(i%50 + 1)
		t += int64(i%7) * 1000
		switch i % 10 {
		case 0:
			out = append(out, Record{Op: OpOpen, Time: t, Session: s, Addr: netip.MustParseAddrPort("10.1.2.3:4567")})
		case 1:
			out = append(out, Record{Op: OpAuth, Time: t, Session: s, Account: uint64(i) * 977})
		case 2:
			out = append(out, Record{Op: OpLabel, Time: t, Session: s, Label: Honest, Group: "honest"})
		case 3:
			out = append(out, Record{Op: OpRead, Time: t, Session: s, Size: 800, Decision: Decision{Action: core.Drop, Reason: core.ByteLimit}})
		case 4:
			out = append(out, Record{Op: OpUnchecked, Time: t, Session: s, Kind: "move", Size: 20, Flags: core.FlagCharged, Decision: Decision{Action: core.Drop, Reason: core.ByteLimit}})
		case 5:
			out = append(out, Record{Op: OpMessage, Time: t, Session: s, Kind: "chat", Size: 44, Request: uint64(i), Match: 9, Decision: Decision{Action: core.Accept, Reason: core.ChannelLimit, Shadow: true}})
		case 6:
			out = append(out, Record{Op: OpDone, Time: t, Session: s, Request: uint64(i - 1)})
		case 7:
			out = append(out, Record{Op: OpMessage, Time: t, Session: s, Size: 5000, Flags: core.FlagMalformed | core.FlagCharged, Decision: Decision{Action: core.Disconnect, Reason: core.Oversize}})
		case 8:
			out = append(out, Record{Op: OpOpen, Time: t, AddrHash: 0xdeadbeef, Decision: Decision{Action: core.Disconnect, Reason: core.AddressLimit}})
		case 9:
			out = append(out, Record{Op: OpClose, Time: t, Session: s})
		}
	}
	out = append(out, Record{Op: OpLost, Time: t, Lost: 3})
	return out
}

func encode(t testing.TB, recs []Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll(t testing.TB, b []byte, opts ReaderOptions) ([]Record, *Reader, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b), opts)
	if err != nil {
		return nil, nil, err
	}
	var out []Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out, r, nil
		}
		if err != nil {
			return out, r, err
		}
		out = append(out, *rec)
	}
}

func TestRoundTrip(t *testing.T) {
	recs := sample(60_000) // several blocks
	b := encode(t, recs)
	got, r, err := readAll(t, b, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header(); !h.Origin.Equal(testHeader.Origin) || h.Recorder != "test" || h.PolicyDigest != "sha256:00" {
		t.Fatalf("header %+v", h)
	}
	if len(got) != len(recs) {
		t.Fatalf("%d records back, wrote %d", len(got), len(recs))
	}
	for i := range recs {
		if got[i] != recs[i] {
			t.Fatalf("record %d: got %+v, wrote %+v", i, got[i], recs[i])
		}
	}
	t.Logf("%d records, %d bytes, %.2f bytes/record", len(recs), len(b), float64(len(b))/float64(len(recs)))
}

func TestWriterOrdersTimes(t *testing.T) {
	recs := []Record{{Op: OpClose, Time: 50, Session: 1}, {Op: OpDone, Time: 0, Session: 1, Request: 3}, {Op: OpClose, Time: 40, Session: 2}}
	got, _, err := readAll(t, encode(t, recs), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{50, 50, 50} {
		if got[i].Time != want {
			t.Fatalf("record %d at %d, want %d (times clamp to the previous record's)", i, got[i].Time, want)
		}
	}
}

func wantFormatError(t *testing.T, err error, cause error, substr string) *FormatError {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) || !errors.Is(err, cause) {
		t.Fatalf("error %v, want a FormatError of %v", err, cause)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("error %q does not say %q", err, substr)
	}
	return fe
}

func TestWrongVersion(t *testing.T) {
	b := encode(t, sample(10))
	b[8] = Version + 1
	_, err := NewReader(bytes.NewReader(b), ReaderOptions{})
	wantFormatError(t, err, ErrVersion, "byte 8 (header)")
	b[8] = 0
	_, err = NewReader(bytes.NewReader(b), ReaderOptions{})
	wantFormatError(t, err, ErrVersion, "byte 8 (header)")
	b[8] = Version
	b[0] = 'X'
	_, err = NewReader(bytes.NewReader(b), ReaderOptions{})
	wantFormatError(t, err, ErrCorrupt, "not a sluice trace")
}

func TestTruncated(t *testing.T) {
	recs := sample(60_000)
	b := encode(t, recs)
	cut := b[:len(b)*2/3]
	got, _, err := readAll(t, cut, ReaderOptions{})
	fe := wantFormatError(t, err, ErrTruncated, "ends inside")
	if fe.Block < 1 || fe.Offset <= 0 {
		t.Fatalf("position %+v", fe)
	}
	if len(got) == 0 || len(got) >= len(recs) {
		t.Fatalf("%d records before the damage", len(got))
	}
	// A file cut exactly at a block boundary lacks only the end block.
	_, _, err = readAll(t, b[:len(b)-blockHead], ReaderOptions{})
	wantFormatError(t, err, ErrTruncated, "end block is missing")

	// Partial: the records up to the damage, and what was lost.
	pgot, r, err := readAll(t, cut, ReaderOptions{Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(pgot) != len(got) {
		t.Fatalf("partial read %d records, strict read %d before failing", len(pgot), len(got))
	}
	for i := range pgot {
		if pgot[i] != recs[i] {
			t.Fatalf("record %d differs", i)
		}
	}
	d := r.Damage()
	if d == nil || d.LostRecords == 0 || d.LostBytes == 0 || !errors.Is(d.Errs[0], ErrTruncated) {
		t.Fatalf("damage %v", d)
	}
	if int64(len(pgot))+d.LostRecords+1 < int64(len(recs)) { // +1: the lost record at the end is in no block header we read
		t.Logf("damage %v (the blocks after the cut announce nothing)", d)
	}
}

// blockOffsets returns the offsets of the blocks of a trace.
func blockOffsets(b []byte) []int {
	off := 13 + int(binary.LittleEndian.Uint32(b[9:]))
	var out []int
	for {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		if n == 0 {
			return out
		}
		out = append(out, off)
		off += blockHead + n
	}
}

func TestCorruptBlock(t *testing.T) {
	recs := sample(60_000)
	b := encode(t, recs)
	offs := blockOffsets(b)
	if len(offs) < 3 {
		t.Fatalf("%d blocks", len(offs))
	}
	bad := bytes.Clone(b)
	bad[offs[1]+blockHead+10] ^= 0xff
	_, _, err := readAll(t, bad, ReaderOptions{})
	fe := wantFormatError(t, err, ErrCorrupt, "checksum")
	if fe.Block != 1 || fe.Offset != int64(offs[1]) || fe.Record != blockRecords {
		t.Fatalf("position %+v, want block 1 at %d, record %d", fe, offs[1], blockRecords)
	}
	got, r, err := readAll(t, bad, ReaderOptions{Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	d := r.Damage()
	if d == nil || d.LostRecords != blockRecords || len(d.Errs) != 1 {
		t.Fatalf("damage %v", d)
	}
	// Every record but the skipped block's (kind definitions are not handed out).
	if len(got) < len(recs)-blockRecords || len(got) >= len(recs) {
		t.Fatalf("%d records after skipping one block of %d", len(got), len(recs))
	}
	if got[len(got)-1] != recs[len(recs)-1] {
		t.Fatalf("the last record differs: %+v", got[len(got)-1])
	}
}

// rawTrace builds a version 1 trace of one block from raw record bytes.
func rawTrace(t *testing.T, raw []byte, count int) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	buf.Bytes()[8] = 1
	enc, _ := zstd.NewWriter(nil)
	comp := enc.EncodeAll(raw, nil)
	var h [blockHead]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(comp)))
	binary.LittleEndian.PutUint32(h[4:], uint32(len(raw)))
	binary.LittleEndian.PutUint32(h[8:], uint32(count))
	binary.LittleEndian.PutUint32(h[12:], crc32.Checksum(comp, castagnoli))
	buf.Write(h[:])
	buf.Write(comp)
	buf.Write(make([]byte, blockHead))
	return buf.Bytes()
}

// rawTrace2 builds a version 2 trace of one block of count entries from
// its columns (the time columns from times, one delta an entry).
func rawTrace2(t testing.TB, cols map[int][]byte, times []uint32) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, dt := range times {
		for i := range 4 {
			cols[colTime0+i] = append(cols[colTime0+i], byte(dt>>(8*i)))
		}
	}
	enc, _ := zstd.NewWriter(nil)
	var payload []byte
	rawLen := 0
	for i := range numCols {
		payload = binary.AppendUvarint(payload, uint64(len(cols[i])))
		rawLen += len(cols[i])
		if len(cols[i]) > 0 {
			comp := enc.EncodeAll(cols[i], nil)
			payload = binary.AppendUvarint(payload, uint64(len(comp)))
			payload = append(payload, comp...)
		}
	}
	var h [blockHead]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:], uint32(rawLen))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(times)))
	binary.LittleEndian.PutUint32(h[12:], crc32.Checksum(payload, castagnoli))
	buf.Write(h[:])
	buf.Write(payload)
	buf.Write(make([]byte, blockHead))
	return buf.Bytes()
}

// The same bad input in a version 2 trace's columns.
func TestUnknownKindV2(t *testing.T) {
	cols := map[int][]byte{
		colHead:    {byte(opKind), byte(OpMessage), byte(OpMessage)},
		colSession: {1, 1}, colDecision: {0, 0}, colKind: {1, 20, 2, 20}, colRequest: {0, 0}, colMatch: {0, 0},
		colOther: {1, 4, 'm', 'o', 'v', 'e'},
	}
	got, _, err := readAll(t, rawTrace2(t, cols, []uint32{0, 5, 5}), ReaderOptions{})
	fe := wantFormatError(t, err, ErrUnknownKind, "kind 2 is not defined")
	if fe.Record != 2 || len(got) != 1 || got[0].Kind != "move" || got[0].Time != 5 {
		t.Fatalf("position %+v, %d records read before", fe, len(got))
	}
}

func TestBadRecordIsCorruptV2(t *testing.T) {
	cols := map[int][]byte{colHead: {byte(OpOpen)}, colSession: {1}, colDecision: {0}, colOther: {7}}
	_, _, err := readAll(t, rawTrace2(t, cols, []uint32{0}), ReaderOptions{})
	wantFormatError(t, err, ErrCorrupt, "address form 7")
	cols = map[int][]byte{colHead: {byte(OpClose)}, colSession: {1, 0xff}}
	_, _, err = readAll(t, rawTrace2(t, cols, []uint32{0}), ReaderOptions{})
	wantFormatError(t, err, ErrCorrupt, "after the block's last record in column 5")
	cols = map[int][]byte{colHead: {byte(OpClose), byte(OpClose)}, colSession: {1}}
	_, _, err = readAll(t, rawTrace2(t, cols, []uint32{0}), ReaderOptions{})
	wantFormatError(t, err, ErrCorrupt, "column 0 holds 2 bytes for the block's 1 entries")
	// A delta too wide for four bytes is in the other column.
	cols = map[int][]byte{colHead: {byte(OpClose)}, colSession: {1}, colOther: binary.AppendUvarint(nil, 1<<40)}
	got, _, err := readAll(t, rawTrace2(t, cols, []uint32{wideTime}), ReaderOptions{})
	if err != nil || len(got) != 1 || got[0].Time != 1<<40 {
		t.Fatalf("wide time: %v, %+v", err, got)
	}
}

func TestUnknownKind(t *testing.T) {
	// A kind definition (1 = "move"), a message of kind 1, and one of kind 2, never defined.
	raw := []byte{byte(opKind), 0, 1, 4, 'm', 'o', 'v', 'e'}
	raw = append(raw, byte(OpMessage), 5, 1, 0, 1, 20, 0, 0)
	raw = append(raw, byte(OpMessage), 5, 1, 0, 2, 20, 0, 0)
	got, _, err := readAll(t, rawTrace(t, raw, 3), ReaderOptions{})
	fe := wantFormatError(t, err, ErrUnknownKind, "kind 2 is not defined")
	if fe.Record != 2 || len(got) != 1 || got[0].Kind != "move" {
		t.Fatalf("position %+v, %d records read before", fe, len(got))
	}
}

func TestBadRecordIsCorrupt(t *testing.T) {
	raw := []byte{byte(OpOpen), 0, 1, 0, 7} // address form 7
	_, _, err := readAll(t, rawTrace(t, raw, 1), ReaderOptions{})
	wantFormatError(t, err, ErrCorrupt, "address form 7")
	raw = []byte{byte(OpClose), 0, 1, 0xff} // a byte after the last record
	_, _, err = readAll(t, rawTrace(t, raw, 1), ReaderOptions{})
	wantFormatError(t, err, ErrCorrupt, "after the block's last record")
}

func TestHasher(t *testing.T) {
	h, err := NewHasher([]byte("0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := h.Account(42), h.Account(43)
	if a == b || a == 42 || a != h.Account(42) {
		t.Fatal("account hashes")
	}
	v4 := netip.MustParseAddr("10.0.0.1")
	if h.Addr(v4) != h.Addr(netip.MustParseAddr("::ffff:10.0.0.1")) {
		t.Fatal("an IPv4 address hashes as its mapped form")
	}
	h2, _ := NewHasher([]byte("another key 0123"))
	if h2.Account(42) == a {
		t.Fatal("the key does not change the hash")
	}
	if _, err := NewHasher([]byte("short")); err == nil {
		t.Fatal("a short key")
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	recs := sample(5000)
	b := encode(t, recs)
	r, err := NewReader(bytes.NewReader(b), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := WriteJSONL(&js, r); err != nil {
		t.Fatal(err)
	}
	var back bytes.Buffer
	w, err := ReadJSONL(bytes.NewReader(js.Bytes()), func(h Header) (*Writer, error) { return NewWriter(&back, h) })
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Bytes(), b) {
		t.Fatal("binary → JSON Lines → binary changed the trace")
	}
}

func TestJSONLErrors(t *testing.T) {
	head := `{"trace":1,"recorder":"x","origin":"2026-01-02T03:04:05Z"}` + "\n"
	for _, c := range []struct{ in, want string }{
		{`{"trace":2}`, `line 1: field "trace": version 2`},
		{`{"recorder":"x"}`, `line 1: field "trace": missing`},
		{head + `{"op":"message","t":1,"size":-3}`, `line 2: field "size": want an unsigned integer`},
		{head + `{"op":"message","t":1,"size":3,"colour":"red"}`, `line 2: field "colour": is not a field of a message record`},
		{head + `{"op":"auth","t":1,"session":1}`, `line 2: field "account": missing`},
		{head + `{"op":"dance","t":1}`, `line 2: field "op": "dance" is not an op`},
		{head + `{"op":"message","t":1,"size":3,"kind":"bad kind"}`, `line 2: field "kind"`},
		{head + `{"op":"message","t":1,"size":3,"reason":"Tired"}`, `line 2: field "reason"`},
		{head + "\n" + `{"op":"close","t":5,"session":1}` + "\n" + `{"op":"close","t":4,"session":2}`, `line 4: field "t": 4 is before`},
		{head + `{"op":"close","t":5,"session":1} x`, `line 2: more than one JSON value`},
		{head + `not json`, `line 2: not a JSON object`},
	} {
		var buf bytes.Buffer
		_, err := ReadJSONL(strings.NewReader(c.in), func(h Header) (*Writer, error) { return NewWriter(&buf, h) })
		var je *JSONLError
		if !errors.As(err, &je) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one saying %q", c.in, err, c.want)
		}
	}
}

func TestSummary(t *testing.T) {
	recs := sample(1000)
	r, _ := NewReader(bytes.NewReader(encode(t, recs)), ReaderOptions{})
	s, err := Summarize(r)
	if err != nil {
		t.Fatal(err)
	}
	if s.Messages != 300 || s.Kinds["move"] != 100 || s.Kinds["chat"] != 100 || s.Kinds[""] != 100 || s.Lost != 3 || s.Sessions != 100 || s.Refused != 100 {
		t.Fatalf("summary %+v", s)
	}
	var out bytes.Buffer
	s.WriteText(&out, r.Header())
	for _, want := range []string{"messages   300", "move", "Drop ByteLimit", "Accept ChannelLimit (shadow)", "lost       3 records"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out.String())
		}
	}
}

// An accepted read and the one message it carried are one entry: the
// trace reads back the same two records, and is smaller than with reads
// that cannot be folded.
//
// The times have a recorded trace's jitter (nanoseconds drawn at random
// about a 50 ms step): on perfectly regular times every column but the
// folded ones compresses to almost nothing, and the comparison would be
// of zstd's noise.
func TestReadFoldsIntoItsMessage(t *testing.T) {
	var folded, plain []Record
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		at := int64(i)*50_000_000 + rng.Int64N(1_000_000)
		s := uint64(i%40 + 1)
		m := Record{Op: OpMessage, Time: at, Session: s, Kind: "move", Size: 18, Flags: core.FlagCharged}
		folded = append(folded, Record{Op: OpRead, Time: at, Session: s, Size: 18}, m)
		plain = append(plain, Record{Op: OpRead, Time: at, Session: s, Size: 19}, m) // another size: not folded
	}
	// Not folded either: a refused read, another session's message, a
	// message without the charged flag, a read at the end.
	folded = append(folded,
		Record{Op: OpRead, Time: 1e12, Session: 1, Size: 18, Decision: Decision{Action: core.Drop, Reason: core.ByteLimit}},
		Record{Op: OpUnchecked, Time: 1e12, Session: 1, Kind: "move", Size: 18, Flags: core.FlagCharged, Decision: Decision{Action: core.Drop, Reason: core.ByteLimit}},
		Record{Op: OpRead, Time: 1e12, Session: 1, Size: 18},
		Record{Op: OpMessage, Time: 1e12, Session: 2, Kind: "move", Size: 18, Flags: core.FlagCharged},
		Record{Op: OpRead, Time: 1e12, Session: 1, Size: 18},
		Record{Op: OpMessage, Time: 1e12, Session: 1, Kind: "move", Size: 18},
		Record{Op: OpRead, Time: 1e12, Session: 1, Size: 18},
	)
	fb, pb := encode(t, folded), encode(t, plain)
	got, _, err := readAll(t, fb, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(folded) {
		t.Fatalf("%d records back, wrote %d", len(got), len(folded))
	}
	for i := range folded {
		if got[i] != folded[i] {
			t.Fatalf("record %d: %+v, wrote %+v", i, got[i], folded[i])
		}
	}
	if len(fb) >= len(pb) {
		t.Fatalf("folded %d bytes, not folded %d", len(fb), len(pb))
	}
	t.Logf("%.2f bytes/message folded, %.2f not", float64(len(fb))/5000, float64(len(pb))/5000)
}
