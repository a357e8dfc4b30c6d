package core_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/sluicedev/sluice/core"
)

// The whole path a server takes: a policy (from YAML, as LoadPolicy reads
// a file), a gate, a connection, and a decision for every message, each
// answered by its action.
func Example() {
	pol, err := core.DecodePolicyYAML([]byte(`
channels:
  - {name: move, class: input, rate: 20, burst: 20}
  - {name: chat, class: request, rate: 1, burst: 2, retryAfter: true}
`))
	if err != nil {
		panic(err) // a *core.PolicyError: the field, its line and column
	}
	const move, chat = 0, 1 // channel indices, in the policy's order
	now := int64(0)
	g, err := core.NewGate(pol, now)
	if err != nil {
		panic(err)
	}
	s, _ := g.Open(netip.MustParseAddrPort("198.51.100.4:40000"), now)
	g.Authenticate(s, 7, now)

	for i := uint64(1); i <= 3; i++ {
		v := g.Check(core.Message{Session: s, Kind: chat, Size: 32, Request: i}, now)
		switch v.Action {
		case core.Accept:
			fmt.Println("chat", i, "accepted")
			g.Done(s, i) // its handler finished
		case core.Reject:
			fmt.Println("chat", i, "rejected:", v.Reason, "retry after", v.RetryAfter)
		}
	}
	now += int64(time.Second)
	fmt.Println("a second later:", g.Check(core.Message{Session: s, Kind: chat, Size: 32, Request: 4}, now).Action)
	fmt.Println("movement:", g.Check(core.Message{Session: s, Kind: move, Size: 12}, now).Action)
	g.Close(s, now)
	// Output:
	// chat 1 accepted
	// chat 2 accepted
	// chat 3 rejected: ChannelLimit retry after 1s
	// a second later: Accept
	// movement: Accept
}
