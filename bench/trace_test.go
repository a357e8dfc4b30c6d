package bench

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/internal/cputime"
	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/sim"
	"github.com/sluicedev/sluice/trace"
)

// benchRecorder is a gate's record buffer drained into a trace file by a
// trace.Recorder on its own goroutine.
type benchRecorder struct {
	buf  *core.RecordBuffer
	rec  *trace.Recorder
	file *os.File
}

func newBenchRecorder(b *testing.B, p core.Policy) *benchRecorder {
	buf, err := core.NewRecordBuffer(1 << 16)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(b.TempDir(), "bench.trace"))
	if err != nil {
		b.Fatal(err)
	}
	w, err := trace.NewWriter(f, trace.Header{Recorder: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	r := trace.NewRecorder(buf, w, p, nil)
	r.Start(time.Millisecond)
	return &benchRecorder{buf: buf, rec: r, file: f}
}

func (r *benchRecorder) stop(b *testing.B) {
	if err := r.rec.Close(); err != nil {
		b.Fatal(err)
	}
	r.file.Close()
	b.ReportMetric(float64(r.buf.Lost())/float64(b.N), "lost/op")
}

// traceRecords is a recorded match's mix: per 64 records, 50 movement
// inputs, a few abilities, chat and pings, the reads that carried them,
// over 200 sessions at about 20 kHz in all. Sessions come in a random
// order and the time between records is drawn at random from 0–100 µs in
// nanoseconds (seeded), as in a recorded trace: bytes/record is then that
// of the entropy of a real trace's times and sessions, not of a pattern
// that zstd would find.
func traceRecords(n int) []trace.Record {
	out := make([]trace.Record, 0, n)
	t := int64(0)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; len(out) < n; i++ {
		s := uint64(rng.IntN(200) + 1)
		t += rng.Int64N(100_000)
		r := trace.Record{Op: trace.OpMessage, Time: t, Session: s, Kind: "move", Size: 18, Flags: core.FlagCharged}
		switch i % 64 {
		case 0:
			r = trace.Record{Op: trace.OpRead, Time: t, Session: s, Size: 800}
		case 7, 21, 40:
			r.Kind, r.Size = "ability", 10
		case 13:
			r.Kind, r.Size, r.Request = "chat", 46, uint64(i)
		case 33:
			r.Kind, r.Size = "ping", 14
		case 50:
			r.Decision = trace.Decision{Action: core.Drop, Reason: core.ChannelLimit}
		}
		out = append(out, r)
	}
	return out
}

// BenchmarkTrace measures the trace format on one core: write (encode and
// compress into memory) and read (decompress and decode), one op one
// record; bytes/record is the compressed size. replay is a sim replay of
// a recorded match (200 sessions, 200,000 movement inputs, each in its own
// read) through the simulated server and its gate: one op is one replay,
// msgs/s and ns/msg its rate (wall time; cpu-ns/op over 200,000 is the CPU
// time per message).
func BenchmarkTrace(b *testing.B) {
	b.Run("replay", func(b *testing.B) {
		const msgs = 200_000
		path := filepath.Join(b.TempDir(), "match.trace")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w, err := trace.NewWriter(f, trace.Header{Recorder: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		d, err := sim.WriteMatchTrace(w, 200, msgs)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		plan := behave.Plan{Seed: 1, Duration: d + time.Second, Populations: []behave.Population{
			{Name: "players", Clients: 1, Behaviour: &sim.Trace{File: path}},
		}}
		spec := loadgen.RunSpec{Plan: plan, Interval: 5 * time.Second}
		pol := behave.DefaultPolicy()
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cputime.Serial()
		for i := 0; i < b.N; i++ {
			if _, err := loadgen.RunSim(context.Background(), spec, pol); err != nil {
				b.Fatal(err)
			}
		}
		cpu.Stop(b)
		b.ReportMetric(float64(b.N*msgs)/b.Elapsed().Seconds(), "msgs/s")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*msgs), "ns/msg")
	})
	recs := traceRecords(1 << 16)
	b.Run("write", func(b *testing.B) {
		var buf bytes.Buffer
		w, err := trace.NewWriter(&buf, trace.Header{Recorder: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cputime.Serial()
		span := recs[len(recs)-1].Time
		for i := 0; i < b.N; i++ {
			r := recs[i&(len(recs)-1)]
			r.Time += int64(i/len(recs)) * span // each lap later than the last, as in a trace
			if err := w.Write(&r); err != nil {
				b.Fatal(err)
			}
			if buf.Len() > 64<<20 {
				buf.Reset()
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		cpu.Stop(b)
		b.ReportMetric(float64(w.Bytes())/float64(b.N), "bytes/record")
	})
	b.Run("read", func(b *testing.B) {
		var buf bytes.Buffer
		w, err := trace.NewWriter(&buf, trace.Header{Recorder: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 16*len(recs); i++ {
			r := recs[i%len(recs)]
			r.Time += int64(i/len(recs)) * recs[len(recs)-1].Time
			if err := w.Write(&r); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		data := buf.Bytes()
		per := float64(len(data)) / float64(16*len(recs))
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cputime.Serial()
		var r *trace.Reader
		for i := 0; i < b.N; i++ {
			if r == nil {
				if r, err = trace.NewReader(bytes.NewReader(data), trace.ReaderOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			rec, err := r.Next()
			if err == io.EOF {
				r = nil
				i--
				continue
			}
			if err != nil {
				b.Fatal(err)
			}
			sinkInt += int(rec.Size)
		}
		cpu.Stop(b)
		b.ReportMetric(per, "bytes/record")
	})
}
