package trace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"
)

// FuzzReader: any bytes read as a trace give records or a FormatError,
// never a panic, in strict and partial mode; a trace that reads cleanly
// writes back to a trace that reads the same.
func FuzzReader(f *testing.F) {
	f.Add(encode(f, sample(50)))
	f.Add(encode(f, nil))
	b := encode(f, sample(30))
	f.Add(b[:len(b)-5])
	v1, err := os.ReadFile("testdata/quickstart-v1-tail.trace")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v1[:4000])
	f.Add(rawTrace2(f, map[int][]byte{colHead: {byte(OpClose)}, colSession: {1}, colOther: binary.AppendUvarint(nil, 1<<40)}, []uint32{wideTime}))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, partial := range []bool{false, true} {
			r, err := NewReader(bytes.NewReader(data), ReaderOptions{Partial: partial})
			if err != nil {
				var fe *FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("header error %v is not a FormatError", err)
				}
				return
			}
			var recs []Record
			for len(recs) < 100000 {
				rec, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					var fe *FormatError
					if !errors.As(err, &fe) {
						t.Fatalf("error %v is not a FormatError", err)
					}
					recs = nil
					break
				}
				recs = append(recs, *rec)
			}
			if partial || recs == nil {
				continue
			}
			var out bytes.Buffer
			w, err := NewWriter(&out, r.Header())
			if err != nil {
				t.Fatal(err)
			}
			for i := range recs {
				if err := w.Write(&recs[i]); err != nil {
					return // a record the reader accepts but the writer refuses: fine
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, _, err := readAll(t, out.Bytes(), ReaderOptions{})
			if err != nil {
				t.Fatalf("rewritten trace does not read: %v", err)
			}
			if len(got) != len(recs) {
				t.Fatalf("rewritten trace has %d records, not %d", len(got), len(recs))
			}
		}
	})
}

// FuzzJSONL: any text read as JSON Lines gives a trace or an error, never
// a panic, and what it converts reads back.
func FuzzJSONL(f *testing.F) {
	f.Add([]byte(`{"trace":1,"recorder":"x","origin":"2026-01-02T03:04:05Z"}` + "\n" + `{"op":"message","t":1,"size":3,"kind":"move","flags":["charged"],"action":"Drop","reason":"ByteLimit"}`))
	f.Add([]byte(`{"trace":1}` + "\n" + `{"op":"open","t":0,"session":1,"addr":"10.0.0.1:9"}` + "\n" + `{"op":"label","t":0,"session":1,"label":"hostile","group":"g"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		w, err := ReadJSONL(bytes.NewReader(data), func(h Header) (*Writer, error) { return NewWriter(&out, h) })
		if err != nil {
			return
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readAll(t, out.Bytes(), ReaderOptions{}); err != nil {
			t.Fatalf("a trace converted from JSON Lines does not read: %v", err)
		}
	})
}
