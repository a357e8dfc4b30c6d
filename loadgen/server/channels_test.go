package server

import (
	"errors"
	"maps"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

func TestChannelStats(t *testing.T) {
	s := startServer(t, testConfig())
	c := mustDial(t, s.Addr())
	c.mustHello(t, "11", "chan")
	var b []byte
	for range 3 {
		b, _ = wire.AppendInput(b, kMove, []byte{1})
	}
	b, _ = wire.AppendRequest(b, kReq, 1, nil)
	b, _ = wire.AppendRequest(b, kReq, 2, nil)
	for id := uint64(3); id <= 5; id++ {
		b, _ = wire.AppendRequest(b, kSlow, id, nil) // burst 1: two ChannelLimit
	}
	b = wire.AppendPing(b, 1)
	b = wire.AppendPing(b, 2)
	b, _ = wire.AppendRequest(b, kReq, 6, nil)
	// Malformed frames last (three earn a lockout), in the same write:
	// they are decided before the tick answers request 6.
	b, _ = wire.AppendInput(b, 9, nil)                    // no channel 9: malformed
	b = wire.AppendHeader(b, 1, wire.Type(77))            // unknown type: malformed
	b, _ = wire.AppendHello(b, []byte("11"), []byte("x")) // a second hello: malformed
	c.mustWrite(t, b)
	for {
		m, err := c.next(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == wire.TypeReply && m.ID == 6 {
			break
		}
	}
	c.nc.Close()
	st := settledStats(t, s)
	p := st.Populations["chan"]
	want := map[string]ChannelStats{
		"move":         {Frames: 3, Accepted: 3},
		"req":          {Frames: 3, Accepted: 3},
		"slow":         {Frames: 3, Accepted: 1, Rejected: map[string]uint64{"ChannelLimit": 2}},
		ChannelPing:    {Frames: 2, Accepted: 2},
		ChannelHello:   {Frames: 2, Accepted: 1, Dropped: map[string]uint64{"Malformed": 1}},
		ChannelUnknown: {Frames: 2, Dropped: map[string]uint64{"Malformed": 2}},
	}
	if len(p.Channels) != len(want) {
		t.Errorf("channels %+v, want %+v", p.Channels, want)
	}
	for name, w := range want {
		got := p.Channels[name]
		if got.Frames != w.Frames || got.Accepted != w.Accepted || !maps.Equal(got.Dropped, w.Dropped) || !maps.Equal(got.Rejected, w.Rejected) {
			t.Errorf("channel %q: %+v, want %+v", name, got, w)
		}
	}
	if _, ok := p.Channels["ping"]; ok {
		t.Error("pings are counted under (ping), not the ping channel")
	}
}

// TestChannelStatsByteLimit: frames of a read the byte budget refused are
// counted under the channel they name.
func TestChannelStatsByteLimit(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Transport.Bytes = core.Budget{Rate: new(100.0), Burst: new(100.0)}
	cfg.Policy.Transport.MinCharge = new(uint32(1))
	s := startServer(t, cfg)
	c := mustDial(t, s.Addr())
	c.mustHello(t, "13", "bytes")
	// Enough moves that some read is refused whole.
	var b []byte
	for range 100 {
		b, _ = wire.AppendInput(b, kMove, make([]byte, 10))
	}
	c.mustWrite(t, b)
	c.waitClosed(2 * time.Second)
	c.nc.Close()
	st := settledStats(t, s)
	p := st.Populations["bytes"]
	if p.Dropped["ByteLimit"] == 0 || p.Channels["move"].Dropped["ByteLimit"] != p.Dropped["ByteLimit"] {
		t.Errorf("bytes: %+v", p)
	}
}

func TestReservedChannelName(t *testing.T) {
	// The server's own rows: refused by New.
	for _, name := range []string{ChannelHello, ChannelPing} {
		cfg := testConfig()
		cfg.Policy.Channels = append(cfg.Policy.Channels, core.Channel{Name: name, Class: core.ClassInput})
		_, err := New(cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != "Policy" || !errors.Is(err, ErrConfig) {
			t.Fatalf("New with a channel named %q: %v", name, err)
		}
	}
	// "(unknown)" is also a row of the gate's own stats: the policy
	// itself refuses it.
	cfg := testConfig()
	cfg.Policy.Channels = append(cfg.Policy.Channels, core.Channel{Name: ChannelUnknown, Class: core.ClassInput})
	if _, err := New(cfg); !errors.Is(err, core.ErrPolicy) {
		t.Fatalf("New with a channel named %q: %v, want a policy error", ChannelUnknown, err)
	}
}

func TestNoLimits(t *testing.T) {
	cfg := testConfig()
	cfg.NoLimits = true
	s := startServer(t, cfg)
	c := mustDial(t, s.Addr())
	c.mustHello(t, "14", "free")
	var b []byte
	for range 500 { // far past move's burst of 90
		b, _ = wire.AppendInput(b, kMove, []byte{1})
	}
	for id := uint64(1); id <= 5; id++ {
		b, _ = wire.AppendRequest(b, kSlow, id, nil) // far past slow's burst of 1
	}
	b = wire.AppendPing(b, 1)
	b, _ = wire.AppendInput(b, kReq, nil) // wrong class: malformed
	b, _ = wire.AppendInput(b, 9, nil)    // no channel: malformed
	b, _ = wire.AppendRequest(b, kReq, 6, nil)
	c.mustWrite(t, b)
	for id := uint64(1); id <= 6; id++ {
		if m, err := c.waitReply(id); err != nil || m.Status != wire.StatusOK {
			t.Fatalf("request %d: %+v %v", id, m, err)
		}
	}
	c.nc.Close()
	st := settledStats(t, s)
	p := st.Populations["free"]
	if p.Accepted != 1+500+5+1+1 || p.Dropped["Malformed"] != 2 || len(p.Dropped) != 1 || len(p.Rejected) != 0 || p.Pongs != 1 {
		t.Errorf("free: %+v", p)
	}
	var decided uint64
	for _, n := range st.Gate.Actions {
		decided += n
	}
	if decided != 0 {
		t.Errorf("the gate was called: %+v", st.Gate)
	}
}

// fakeConn reads the same bytes over and over; nothing else is called.
type fakeConn struct {
	net.Conn
	data []byte
	off  int
}

func (f *fakeConn) Read(p []byte) (int, error) {
	n := copy(p, f.data[f.off:])
	f.off = (f.off + n) % len(f.data)
	return n, nil
}

func (f *fakeConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 1} }

// SetReadDeadline takes the deadline a read that ends the connection sets
// (stopReader), so that a test or benchmark reports that rather than
// crash on the embedded nil net.Conn.
func (*fakeConn) SetReadDeadline(time.Time) error { return nil }

// TestReadPathDoesNotAllocate runs the reader's per-read work (decode,
// gate calls, per-channel tally, flush) on reads of mixed frames.
func TestReadPathDoesNotAllocate(t *testing.T) {
	cfg := testConfig()
	cfg.QueueSize = 64 // fills at once: the rest are refused QueueFull
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for i := range 40 {
		data, _ = wire.AppendInput(data, uint8([]int{kMove, kPing}[i%2]), make([]byte, i%7))
	}
	fc := &fakeConn{data: data}
	c := s.newConn(fc)
	now := atomicbucket.Nanotime()
	h, v := s.gate.Open(netip.MustParseAddrPort("127.0.0.9:1"), now)
	if v.Action != core.Accept {
		t.Fatalf("Open: %v", v)
	}
	c.h = h
	c.framer, err = wire.NewFramer(c, s.maxFrame, s.readBuf)
	if err != nil {
		t.Fatal(err)
	}
	read := func() {
		n, err := c.framer.Fill()
		if err != nil {
			t.Fatal(err)
		}
		now += int64(time.Second) // every bucket refills
		if _, stop := c.handleRead(n, now); stop {
			t.Fatal("the connection ended")
		}
	}
	read()
	if allocs := testing.AllocsPerRun(200, read); allocs != 0 {
		t.Errorf("%v allocations per read", allocs)
	}
	st := s.Stats()
	p := st.Populations[PopulationNone]
	checkPopulation(t, PopulationNone, p)
	if p.Channels["move"].Frames == 0 || p.Channels["ping"].Frames == 0 || p.Dropped["QueueFull"] == 0 {
		t.Errorf("counts: %+v", p)
	}
	s.gate.Close(h, now)
}

// TestTallySpills: a read with more distinct (channel, outcome) pairs than
// the tally batches still counts every frame.
func TestTallySpills(t *testing.T) {
	p := newPopulations(4, 300, 1)
	pc := p.none
	var tl tally
	tl.countInto(pc)
	for row := range 40 {
		tl.row = row
		tl.frames += 2
		tl.accept()
		tl.drop(core.ChannelLimit)
	}
	tl.flush()
	rows := make([]string, 300)
	for i := range rows {
		rows[i] = string(rune('A' + i))
	}
	ps, _ := pc.snapshot(rows)
	if ps.Frames != 80 || ps.Accepted != 40 || ps.Dropped["ChannelLimit"] != 40 || len(ps.Channels) != 40 {
		t.Errorf("totals: %+v", ps)
	}
	checkPopulation(t, "none", ps)
}

// TestStripesSum: connections are given the stripes in turn, each read
// counts in its connection's stripe alone, and a snapshot sums the
// stripes, so every frame and byte counts exactly once.
func TestStripesSum(t *testing.T) {
	const stripes, rows = 4, 5
	p := newPopulations(4, rows, stripes)
	pc := p.get([]byte("striped"))
	tls := make([]tally, 2*stripes+1)
	for i := range tls {
		tl := &tls[i]
		tl.stripe = p.stripe()
		tl.countInto(pc)
		if want := int32(i % stripes); tl.stripe != want {
			t.Fatalf("connection %d given stripe %d, want %d", i, tl.stripe, want)
		}
		// Connection i counts i+1 frames: i+1 accepted on row i%rows,
		// and, from connection 1 on, one of them dropped on row 0.
		tl.row = i % rows
		tl.frames = uint64(i + 1)
		for range i {
			tl.accept()
		}
		if i > 0 {
			tl.row = 0
			tl.drop(core.ChannelLimit)
		} else {
			tl.accept()
		}
		pc.stripes[tl.stripe].bytes.Add(uint64(10 * (i + 1)))
		tl.flush()
	}
	for i, st := range pc.stripes {
		var want uint64
		for j := i; j < len(tls); j += stripes {
			want += uint64(j + 1)
		}
		if n := st.frames.Load(); n != want {
			t.Errorf("stripe %d: %d frames, want %d", i, n, want)
		}
	}
	n := uint64(len(tls))
	ps, _ := pc.snapshot([]string{"a", "b", "c", "d", "e"})
	if wantFrames := n * (n + 1) / 2; ps.Frames != wantFrames || ps.Bytes != 10*wantFrames || ps.Dropped["ChannelLimit"] != n-1 || ps.Accepted != wantFrames-(n-1) {
		t.Errorf("totals: %+v", ps)
	}
	checkPopulation(t, "striped", ps)
}
