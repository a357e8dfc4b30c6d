package core_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/sluicedev/sluice/core"
)

const second = int64(time.Second)

// A server opens a session per connection, authenticates it, and asks the
// gate about every inbound message before its own validation.
func ExampleGate() {
	p := core.Policy{Channels: []core.Channel{
		{Name: "move", Class: core.ClassInput, Rate: new(30.0)},
		{Name: "buy", Class: core.ClassRequest, Rate: new(1.0), Burst: new(2.0), InFlight: 1},
	}}
	const move, buy = 0, 1
	g, err := core.NewGate(p, 0)
	if err != nil {
		panic(err)
	}
	s, _ := g.Open(netip.MustParseAddrPort("203.0.113.7:50000"), 0)
	g.Authenticate(s, 1001, 0)

	fmt.Println(g.Check(core.Message{Session: s, Kind: move, Size: 24}, 0))
	fmt.Println(g.Check(core.Message{Session: s, Kind: buy, Size: 64, Request: 1}, 0))
	fmt.Println(g.Check(core.Message{Session: s, Kind: buy, Size: 64, Request: 1}, 0)) // sent again while its handler runs
	fmt.Println(g.Check(core.Message{Session: s, Kind: buy, Size: 64, Request: 2}, 0)) // a second purchase in flight
	g.Done(s, 1)                                                                       // the purchase handler finished
	fmt.Println(g.Check(core.Message{Session: s, Kind: buy, Size: 64, Request: 1}, 0)) // the same id again
	fmt.Println(g.Check(core.Message{Session: s, Kind: buy, Size: 64, Request: 2}, 0))
	g.Done(s, 2)
	fmt.Println(g.Check(core.Message{Session: s, Kind: buy, Size: 64, Request: 3}, 0)) // over the rate
	g.Close(s, 0)
	fmt.Println(g.Check(core.Message{Session: s, Kind: move, Size: 24}, 0))
	// Output:
	// Accept
	// Accept
	// Drop Duplicate
	// Reject InFlightLimit
	// Drop Replay
	// Accept
	// Reject ChannelLimit, retry after 1s
	// Drop NoSession
}

// In shadow mode the gate decides and counts, but accepts everything: a
// policy can be tried on live traffic first.
func ExampleGate_shadow() {
	p := core.Policy{
		Channels: []core.Channel{{Name: "chat", Class: core.ClassRequest, Rate: new(1.0)}},
		Shadow:   true,
	}
	g, _ := core.NewGate(p, 0)
	s, _ := g.Open(netip.MustParseAddrPort("203.0.113.7:50000"), 0)
	for id := uint64(1); id <= 3; id++ {
		fmt.Println(g.Check(core.Message{Session: s, Kind: 0, Size: 40, Request: id}, 0))
		g.Done(s, id)
	}
	st := g.Stats()
	fmt.Println("would have rejected:", st.Count("chat", core.ChannelLimit))
	// Output:
	// Accept
	// Accept (shadow: ChannelLimit), retry after 1s
	// Accept (shadow: ChannelLimit), retry after 1s
	// would have rejected: 2
}

// Transport floods are reported once per session and reason per Step, with
// the number of drops; a strike policy can weigh them.
func ExampleGate_Observe() {
	p := core.Policy{Channels: []core.Channel{{Name: "move", Class: core.ClassInput, Rate: new(1000.0)}}}
	g, _ := core.NewGate(p, 0)
	g.Observe(core.GateObserver{
		Flood: func(e core.FloodEvent) {
			fmt.Printf("flood: %v ×%d (%d bytes, budget %d)\n", e.Reason, e.Count, e.Bytes, e.Budget)
		},
		Strike: func(e core.StrikeEvent) { fmt.Printf("strike stage %v at %.0f points\n", e.Stage, e.Score) },
	})
	s, _ := g.Open(netip.MustParseAddrPort("203.0.113.7:50000"), 0)
	accepted := 0
	for range 12 { // twelve tiny reads at once: the minimum charge of 800 bytes allows ten
		if g.Check(core.Message{Session: s, Kind: 0, Size: 10}, 0).OK() {
			accepted++
		}
	}
	g.Step(second / 60)
	fmt.Println("accepted:", accepted)
	// Output:
	// strike stage warn at 4 points
	// strike stage shed at 8 points
	// flood: ByteLimit ×2 (20 bytes, budget 8000)
	// accepted: 10
}

// Policies are usually files; errors name the field and its line.
func ExampleDecodePolicyYAML() {
	_, err := core.DecodePolicyYAML([]byte(`
channels:
  - name: chat
    class: request
    rate: 0
`))
	fmt.Println(err)
	_, err = core.DecodePolicyYAML([]byte(`
transport:
  bytes:
    rate: 480000
    brust: 8000
`))
	fmt.Println(err)
	// Output:
	// core: policy: channels[0].rate (line 5): 0 must be greater than 0
	// core: policy: transport.bytes.brust (line 5): unknown field "brust" in Budget (did you mean "burst"?)
}

// Audit points out limits that validate but will not do what their numbers
// suggest.
func ExampleAudit() {
	p := core.Policy{Channels: []core.Channel{
		{Name: "move", Class: core.ClassInput},
		{Name: "buy", Class: core.ClassRequest, Rate: new(1.0), Burst: new(1.0), RetryAfter: new(false)},
	}}
	for _, f := range core.Audit(p) {
		fmt.Println(f.Severity, f.Kind, f.Channel)
	}
	fmt.Println(core.AuditStrict(p)[0])
	// Output:
	// warning RequestWithoutRetry buy
	// warning BurstOfOne buy
	// info DefaultRateLimit move
	// info BurstUnreachable move
	// error DefaultRateLimit move: runs at the default 30/s, tuned for no game; say what the game needs (an ability used twice a second wants about 5)
}
