package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func seedFrames(f *testing.F) {
	for _, m := range sample() {
		b, err := Append(nil, &m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	buf, _ := Append(nil, &Msg{Type: TypeInput, Kind: 1, Payload: []byte{1}})
	buf = AppendPing(buf, 3)
	f.Add(buf)
	f.Add([]byte{0, 0, 0, 0})
	f.Add(AppendHeader(nil, 1<<31, TypeRequest))
	f.Add(append(AppendHeader(nil, 3, TypeHello), 1, 9))
	f.Add([]byte{})
}

// FuzzDecode: decoding arbitrary bytes never panics and never allocates;
// every frame it accepts fits the maximum and re-encodes to exactly the
// bytes it came from; the consumed counts add up.
func FuzzDecode(f *testing.F) {
	seedFrames(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 512
		var d Decoder
		d.Max = max
		d.Reset(data)
		var m Msg
		consumed := 0
		for {
			before := d.Consumed()
			err := d.Next(&m)
			n := d.Consumed() - before
			switch {
			case err == nil:
				if m.Size != n || n < HeaderSize || n > max {
					t.Fatalf("frame size %d consumed %d", m.Size, n)
				}
				re, aerr := Append(nil, &m)
				if aerr != nil {
					t.Fatalf("re-encode: %v", aerr)
				}
				if !bytes.Equal(re, data[before:before+n]) {
					t.Fatalf("re-encode %x != %x", re, data[before:before+n])
				}
			case errors.Is(err, ErrMalformed):
				if n != m.Size || n < LenSize || n > max {
					t.Fatalf("malformed frame size %d consumed %d", m.Size, n)
				}
			case err == ErrOversize:
				if n != 0 || m.Size <= max {
					t.Fatalf("oversize: consumed %d size %d", n, m.Size)
				}
			case err == ErrIncomplete, err == io.EOF:
				if n != 0 {
					t.Fatalf("%v consumed %d", err, n)
				}
			default:
				t.Fatalf("unexpected error %v", err)
			}
			consumed += n
			if err == ErrIncomplete || err == ErrOversize || err == io.EOF {
				break
			}
		}
		if consumed+len(d.Rest()) != len(data) {
			t.Fatalf("consumed %d + rest %d != %d", consumed, len(d.Rest()), len(data))
		}
		// Ten runs: AllocsPerRun divides by the runs, so a stray allocation
		// by the fuzzing engine's own goroutines does not count.
		allocs := testing.AllocsPerRun(10, func() {
			d.Reset(data)
			for err := error(nil); err == nil || errors.Is(err, ErrMalformed); {
				err = d.Next(&m)
			}
		})
		if allocs != 0 {
			t.Fatalf("decode allocated %v times", allocs)
		}
	})
}

// FuzzRoundTrip: any encodable message decodes back to itself.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(2), uint64(3), uint8(1), uint8(4), uint64(5), []byte("tok"), []byte("pop"))
	f.Add(uint8(4), uint8(0), uint8(0), uint64(1<<63), uint8(2), uint8(255), uint64(1<<64-1), []byte{}, []byte{})
	f.Add(uint8(3), uint8(0), uint8(9), uint64(0), uint8(0), uint8(0), uint64(0), make([]byte, 300), []byte{1})
	f.Fuzz(func(t *testing.T, typ, version, kind uint8, id uint64, status, reason uint8, u64 uint64, b1, b2 []byte) {
		m := Msg{Type: Type(typ)}
		switch m.Type {
		case TypeHello:
			m.Version, m.Token, m.Label = version, b1, b2
		case TypeInput:
			m.Kind, m.Payload = kind, b1
		case TypeRequest:
			m.Kind, m.ID, m.Payload = kind, id, b1
		case TypeReply:
			m.ID, m.Status, m.Reason, m.RetryAfter = id, Status(status), reason, u64
		case TypeDisconnect:
			m.Reason = reason
		case TypePing, TypePong:
			m.Timestamp = u64
		}
		buf, err := Append(nil, &m)
		if !m.Type.Valid() || len(m.Token) > MaxToken || len(m.Label) > MaxLabel || m.Type == TypeReply && !m.Status.Valid() {
			if err == nil {
				t.Fatalf("Append accepted %+v", m)
			}
			return
		}
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
		size, _ := FrameSize(&m)
		if size != len(buf) {
			t.Fatalf("FrameSize %d, encoded %d", size, len(buf))
		}
		var got Msg
		n, err := Decode(buf, len(buf), &got)
		if err != nil || n != len(buf) {
			t.Fatalf("Decode: n %d err %v", n, err)
		}
		// One byte less of maximum makes it oversize.
		if _, err := Decode(buf, len(buf)-1, &Msg{}); err != ErrOversize {
			t.Fatalf("max-1: %v", err)
		}
		m.Size = len(buf)
		if !equalMsg(m, got) {
			t.Fatalf("round trip: %+v != %+v", got, m)
		}
	})
}

func equalMsg(a, b Msg) bool {
	return a.Type == b.Type && a.Size == b.Size && a.Version == b.Version &&
		bytes.Equal(a.Token, b.Token) && bytes.Equal(a.Label, b.Label) &&
		a.Kind == b.Kind && a.ID == b.ID && bytes.Equal(a.Payload, b.Payload) &&
		a.Status == b.Status && a.Reason == b.Reason && a.RetryAfter == b.RetryAfter &&
		a.Timestamp == b.Timestamp
}

// chunkReader returns data in chunks whose sizes come from sizes (cycled).
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(r.sizes) > 0 {
		n = int(r.sizes[r.i%len(r.sizes)])%97 + 1
		r.i++
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// FuzzFramer: reading through a Framer in any chunking gives the same
// frames and errors as decoding the whole buffer at once, and its buffer
// never grows.
func FuzzFramer(f *testing.F) {
	seedFrames(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = MinFrameLimit
		sizes := data
		if len(sizes) > 8 {
			sizes = sizes[:8]
		}
		fr, err := NewFramer(&chunkReader{data: data, sizes: sizes}, max, max)
		if err != nil {
			t.Fatal(err)
		}
		d := Decoder{Max: max}
		d.Reset(data)
		var fm, dm Msg
		for i := 0; ; i++ {
			ferr := fr.ReadMsg(&fm)
			derr := d.Next(&dm)
			if fr.Cap() != max || len(fr.buf) != max || cap(fr.buf) != max {
				t.Fatalf("framer buffer grew to %d", cap(fr.buf))
			}
			switch {
			case derr == io.EOF:
				if ferr != io.EOF {
					t.Fatalf("frame %d: framer %v, decoder EOF", i, ferr)
				}
				return
			case derr == ErrIncomplete:
				if ferr != io.ErrUnexpectedEOF {
					t.Fatalf("frame %d: framer %v, decoder incomplete", i, ferr)
				}
				return
			case ferr != derr:
				t.Fatalf("frame %d: framer %v, decoder %v", i, ferr, derr)
			}
			if !equalMsg(fm, dm) {
				t.Fatalf("frame %d: framer %+v, decoder %+v", i, fm, dm)
			}
			if derr == ErrOversize {
				return
			}
		}
	})
}
