package trace

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/sluicedev/sluice/core"
)

func recPolicy() core.Policy {
	f := func(v float64) *float64 { return &v }
	return core.Policy{Channels: []core.Channel{
		{Name: "move", Class: core.ClassInput, Rate: f(100), Burst: f(100)},
		{Name: "chat", Class: core.ClassRequest, Rate: f(1), Burst: f(1)},
	}}
}

// A gate with a recorder attached, drained into a trace: the sessions are
// numbered, kinds named, accounts and addresses hashed, a refused message
// keeps its decision, and records the buffer lost are in the trace.
func TestRecorderFromGate(t *testing.T) {
	buf, err := core.NewRecordBuffer(8)
	if err != nil {
		t.Fatal(err)
	}
	p := recPolicy()
	g, err := core.NewGate(p, 0, core.WithRecorder(buf))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := NewWriter(&out, Header{Recorder: "test", PolicyDigest: PolicyDigest(g.Policy()), Hashed: true})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := NewHasher([]byte("0123456789abcdef"))
	rec := NewRecorder(buf, w, g.Policy(), h)
	src := netip.MustParseAddrPort("192.0.2.9:1000")
	s, _ := g.Open(src, 1)
	g.Authenticate(s, 77, 2)
	buf.Push(core.GateRecord{Op: core.OpLabel, Time: 2, Session: s, Label: uint8(Hostile), Group: "flood"})
	g.Check(core.Message{Session: s, Kind: 1, Request: 1, Size: 30}, 3)
	g.Check(core.Message{Session: s, Kind: 1, Request: 2, Size: 30}, 4) // ChannelLimit
	if err := rec.Drain(); err != nil {
		t.Fatal(err)
	}
	for i := range 12 { // over the buffer's 8: some lost
		g.Check(core.Message{Session: s, Kind: 0, Size: 10}, int64(5+i))
	}
	g.Close(s, 20)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, err := readAll(t, out.Bytes(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Op: OpOpen, Time: 1, Session: 1, AddrHash: h.Addr(src.Addr())},
		{Op: OpAuth, Time: 2, Session: 1, Account: h.Account(77)},
		{Op: OpLabel, Time: 2, Session: 1, Label: Hostile, Group: "flood"},
		{Op: OpMessage, Time: 3, Session: 1, Kind: "chat", Request: 1, Size: 30},
		{Op: OpMessage, Time: 4, Session: 1, Kind: "chat", Request: 2, Size: 30, Decision: Decision{Action: core.Reject, Reason: core.ChannelLimit}},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	rest := got[len(want):]
	if rest[0].Op != OpLost || rest[0].Lost != 5 || len(rest) != 9 {
		t.Fatalf("after the drain: %+v (want the 5 lost, then 8 messages)", rest)
	}
	if rec.Lost() != 5 {
		t.Fatalf("Lost %d", rec.Lost())
	}
}
