package wire

import (
	"bytes"
	"testing"
)

// A buffer of typical client traffic: inputs, requests and pings.
func benchBuffer() ([]byte, int) {
	var buf []byte
	frames := 0
	payload := make([]byte, 16)
	for len(buf) < 4000 {
		buf, _ = AppendInput(buf, 1, payload)
		buf, _ = AppendRequest(buf, 2, uint64(frames), payload)
		buf = AppendPing(buf, uint64(frames))
		frames += 3
	}
	return buf, frames
}

func BenchmarkDecode(b *testing.B) {
	buf, frames := benchBuffer()
	var d Decoder
	var m Msg
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(buf)
		for d.Next(&m) == nil {
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/frame")
}

func BenchmarkEncode(b *testing.B) {
	payload := make([]byte, 16)
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = AppendInput(dst[:0], 1, payload)
		dst, _ = AppendRequest(dst, 2, 7, payload)
		dst = AppendPing(dst, 9)
	}
}

func BenchmarkFramer(b *testing.B) {
	buf, frames := benchBuffer()
	r := bytes.NewReader(buf)
	f, err := NewFramer(r, DefaultMaxFrame, 0)
	if err != nil {
		b.Fatal(err)
	}
	var m Msg
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(buf)
		f.err = nil
		for f.ReadMsg(&m) == nil {
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/frame")
}
