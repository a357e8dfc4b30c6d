package server

import (
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// With a recorder on its gate the server records each session's group
// from its Hello, and the frames of a read the byte budget refused (which
// the gate never sees) with the read's verdict.
func TestServerRecords(t *testing.T) {
	buf, err := core.NewRecordBuffer(1 << 10)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Policy.Transport.Bytes = core.Budget{Rate: new(1.0), Burst: new(1000.0)}
	cfg.Policy.Transport.MinCharge = new(uint32(1))
	cfg.GateOptions = []core.GateOption{core.WithRecorder(buf)}
	s := startServer(t, cfg)
	c := mustDial(t, s.Addr())
	c.mustHello(t, "7", "players")
	var b []byte
	for range 3 {
		b, _ = wire.AppendInput(b, 0, make([]byte, 10))
	}
	c.mustWrite(t, b)
	var recs []core.GateRecord
	var label, unchecked, checks int
	// wait drains the buffer until done says enough was seen.
	wait := func(done func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !done() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			recs = buf.Drain(recs[:0])
			for _, r := range recs {
				switch r.Op {
				case core.OpLabel:
					label++
					if r.Group != "players" {
						t.Errorf("label %+v", r)
					}
				case core.OpUnchecked:
					unchecked++
					if r.Reason != core.ByteLimit || r.Kind != 0 || r.Size == 0 {
						t.Errorf("unchecked %+v", r)
					}
				case core.OpCheck:
					checks++
				}
			}
		}
	}
	wait(func() bool { return checks >= 3 }) // the small frames are read on their own
	// A read of more than the 1000-byte burst is refused whole.
	var big []byte
	for range 40 {
		big, _ = wire.AppendInput(big, 0, make([]byte, 40))
	}
	c.mustWrite(t, big)
	wait(func() bool { return unchecked > 0 })
	if label != 1 || checks < 3 || unchecked == 0 {
		t.Fatalf("%d labels, %d checks, %d unchecked frames recorded", label, checks, unchecked)
	}
}
