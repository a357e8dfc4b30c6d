package behave

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// Sends lists exactly the kinds a behaviour's clients send: checked
// against an hour of one client's actions, for every behaviour at its
// defaults and for parameters that change the kinds.
func TestSendsMatchesTheStreams(t *testing.T) {
	type c struct{ name, params string }
	cases := []c{
		{"honest", "{chat_every: -1s, tick_rate: -1}"},
		{"laggy", "{purchase_every: -1s, ping_every: -1s}"},
		{"mass-reconnect", "{ability_every: -1s}"},
		{"tiny-flood", "{kind: chat}"},
		{"byte-flood", "{kind: purchase}"},
		{"replay", "{kind: chat}"},
		{"channel-hop", "{targets: [{kind: ping, rate: 2}, {kind: ability, rate: 3}]}"},
		{"reset-reconnect", "{kind: move}"},
		{"key-churn", "{kind: purchase}"},
		{"hot-key", "{kind: ability}"},
		{"slowloris", "{session: true}"},
		{"bad-length", "{mode: mixed}"},
		{"malformed", "{mode: mixed}"},
	}
	for _, name := range BehaviourNames() {
		cases = append(cases, c{name, ""})
	}
	for _, tc := range cases {
		b, err := NewBehaviour(tc.name)
		require.NoError(t, err)
		if tc.params != "" {
			require.NoError(t, yaml.Unmarshal([]byte(tc.params), b), tc.name)
		}
		require.NoError(t, b.Validate(), tc.name)
		got, ok := Sends(b)
		require.True(t, ok, "Sends does not know %s", tc.name)
		var seen [NumKinds]bool
		cl := &Client{Seed: 7, Label: "p", End: int64(time.Hour), Behaviour: b}
		s := cl.Stream()
		var a Action
		for s.Next(&a) {
			if a.Op == OpSend {
				seen[a.Kind] = true
			}
		}
		var want []Kind
		for k, on := range seen {
			if on {
				want = append(want, Kind(k))
			}
		}
		assert.Equal(t, want, got, "%s %s", tc.name, tc.params)
	}
}
