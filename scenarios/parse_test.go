package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/reports"
)

const minimal = `name: t
seed: 7
duration: 10s
warmup: 1s
driver: sim
policy:
  channels:
    - name: move
      class: input
      rate: 30
populations:
  - name: honest
    behaviour: honest
    count: 3
thresholds:
  - honest.drop_rate < 0.1%
  - honest.move.send_lag_p99 < 50ms
`

func TestParseMinimal(t *testing.T) {
	s, err := Parse([]byte(minimal), "t.yaml")
	require.NoError(t, err)
	assert.Equal(t, "t", s.Name)
	assert.Equal(t, DriverSim, s.Driver)
	assert.Equal(t, ArrivalAll, s.Population[0].Arrival.Kind)
	assert.Equal(t, s.Duration, s.Population[0].Stop)
	th := s.ThresholdList()
	require.Len(t, th, 2)
	assert.Equal(t, "honest", th[0].Population)
	assert.Equal(t, "drop_rate", th[0].Metric)
	assert.InDelta(t, 0.001, th[0].Value, 1e-12)
	assert.Equal(t, "move", th[1].Kind)
	assert.Equal(t, 50e6, th[1].Value)
	pols, err := s.Policies()
	require.NoError(t, err)
	require.Len(t, pols, 1)
	assert.Equal(t, "base", pols[0].Name)
	assert.Len(t, s.SHA256, 64)
}

func TestParseErrorsGivePositionPathAndSuggestion(t *testing.T) {
	cases := []struct {
		name, from, to string
		want           []string
	}{
		{"misspelt key", "    count: 3", "    cuont: 3", []string{"t.yaml:14:5:", "populations[0].cuont", "unknown field", `did you mean "count"?`}},
		{"wrong type", "    count: 3", "    count: many", []string{"t.yaml:14:12:", "populations[0].count", `"many" is not a valid integer`}},
		{"bad duration", "duration: 10s", "duration: 10", []string{"t.yaml:3:11:", "duration", "not a duration"}},
		{"unknown driver", "driver: sim", "driver: udp", []string{"t.yaml:5:9:", "driver", `"udp" is not a driver`}},
		{"top-level typo", "warmup: 1s", "warmpu: 1s", []string{"t.yaml:4:1:", "warmpu", `did you mean "warmup"?`}},
		{"threshold metric", "honest.drop_rate < 0.1%", "honest.drop_rat < 0.1%", []string{"thresholds[0]", `unknown metric "drop_rat"`, `did you mean "drop_rate"?`}},
		{"threshold population", "honest.drop_rate < 0.1%", "honset.drop_rate < 0.1%", []string{"thresholds[0]", `no population named "honset"`}},
		{"duration too long", "duration: 10s", "duration: 25h", []string{"t.yaml:3:11:", "duration", "is longer than the longest run, 24h"}},
		{"warmup too long", "warmup: 1s", "warmup: 11s", []string{"t.yaml:4:9:", "warmup", "shorter than duration"}},
		{"population twice", "thresholds:", "  - name: honest\n    behaviour: honest\n    count: 1\nthresholds:", []string{"t.yaml:15:11:", "populations[1].name", `"honest" is used twice`}},
		{"policy field", "      rate: 30", "      rtae: 30", []string{"t.yaml:10:7:", "policy.channels[0].rtae", "unknown field", `did you mean "rate"?`}},
		{"policy class", "      class: input", "      class: inptu", []string{"t.yaml:9:14:", "policy.channels[0].class", `unknown class "inptu"`}},
		{"policy reason", "      rate: 30", "      rate: 30\n  strikes:\n    weights: {ChanelLimit: 2}", []string{"t.yaml:12:15:", "policy.strikes.weights.ChanelLimit", `"ChanelLimit"`}},
		{"policy class shape", "      class: input", "      class: [input]", []string{"t.yaml:9:14:", "policy.channels[0].class", "want a string, got a sequence"}},
		{"merge key", "policy:\n", "policy:\n  <<: {shadow: false}\n", []string{"t.yaml:7:3:", "policy.<<", "merge keys (<<) are not supported"}},
		{"variant set field", "thresholds:", "variants:\n  - name: v\n    set:\n      acount: {rate: 5}\nthresholds:", []string{"t.yaml:18:7:", "variants[0].set.acount", `did you mean "account"?`}},
		// A key or a named item written twice in a set: the merge would
		// keep the last one silently.
		{"set key twice", "thresholds:", "variants:\n  - name: v\n    set:\n      channels: [{name: move, rate: 10, rate: 50}]\nthresholds:", []string{"t.yaml:18:41:", "variants[0].set.channels[0].rate", "repeated field"}},
		// A null name names nothing: it is missing, not the name "~" used twice.
		{"null name twice", "thresholds:", "  - name: ~\n    behaviour: honest\n    count: 1\n  - name: ~\n    behaviour: honest\n    count: 1\nthresholds:", []string{"t.yaml:15:5:", "populations[1].name", "is required"}},
		{"set item twice", "thresholds:", "variants:\n  - name: v\n    set:\n      channels: [{name: move, rate: 10}, {name: move, rate: 50}]\nthresholds:", []string{"t.yaml:18:49:", "variants[0].set.channels[1].name", `"move" is used twice`}},
		// Checks of the scenario's own fields, with position and path.
		{"key twice", "seed: 7", "seed: 7\nseed: 8", []string{"t.yaml:3:1:", "seed", "repeated key"}},
		{"merge key at the top", "seed: 7", "<<: {seed: 7}", []string{"t.yaml:2:1:", "<<", "merge keys (<<) are not supported"}},
		{"behaviour param kind", "    count: 3", "    count: 3\n  - name: r\n    behaviour: replay\n    count: 1\n    params: {kind: chta}", []string{"t.yaml:18:20:", "populations[1].params.kind", `unknown kind "chta"`}},
		{"policy value", "      rate: 30", "      rate: -1", []string{"t.yaml:10:13: policy.channels[0].rate: -1 must be greater than 0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(minimal, c.from, c.to, 1)
			require.NotEqual(t, minimal, doc, "the case must change the document")
			s, err := Parse([]byte(doc), "t.yaml")
			if err == nil {
				_, err = s.Policies()
			}
			require.Error(t, err)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestFieldErrorIsTyped(t *testing.T) {
	_, err := Parse([]byte(strings.Replace(minimal, "seed: 7", "sead: 7", 1)), "x.yaml")
	var fe *FieldError
	require.True(t, errors.As(err, &fe))
	assert.Equal(t, 2, fe.Line)
	assert.Equal(t, 1, fe.Col)
	assert.Equal(t, "seed", fe.Suggestion)
}

func TestVariantsMergeOverTheBase(t *testing.T) {
	doc := minimal + `variants:
  - name: strict
    set:
      channels:
        - name: move
          rate: 10
      transport:
        frames:
          rate: 60
  - name: loose
    set:
      channels:
        - name: chat
          class: request
          rate: 2
`
	s, err := Parse([]byte(doc), "t.yaml")
	require.NoError(t, err)
	base, strictSet := cloneNode(&s.Policy), cloneNode(&s.Variants[0].Set)
	pols, err := s.Policies()
	require.NoError(t, err)
	require.Len(t, pols, 2)
	strict, loose := pols[0].Policy, pols[1].Policy
	require.Len(t, strict.Channels, 1)
	assert.Equal(t, 10.0, *strict.Channels[0].Rate)
	assert.Equal(t, "input", strict.Channels[0].Class.String(), "fields not set keep the base value")
	assert.Equal(t, 60.0, *strict.Transport.Frames.Rate)
	require.Len(t, loose.Channels, 2, "a new name is appended")
	assert.Equal(t, 30.0, *loose.Channels[0].Rate)
	assert.Equal(t, "chat", loose.Channels[1].Name)
	// Merging changes neither the base policy nor a variant's set (both
	// sides cloned: cloneNode makes every nil Content empty).
	assert.Equal(t, base, cloneNode(&s.Policy))
	assert.Equal(t, strictSet, cloneNode(&s.Variants[0].Set))
	_, _, _, err = s.prepare(Options{Policy: "nope"})
	assert.ErrorContains(t, err, `no policy variant "nope" (have [`)
	assert.ErrorIs(t, err, ErrNoVariant)
	assert.ErrorIs(t, err, ErrOption)
}

func TestThresholdParsing(t *testing.T) {
	for _, c := range []struct {
		in        string
		pop, kind string
		metric    string
		value     float64
		ok        bool
	}{
		{"hostile.admitted_per_s <= 300", "hostile", "", "admitted_per_s", 300, true},
		{"honest.chat.p99 < 50ms", "honest", "chat", "p99", 50e6, true},
		{"all.drops.ByteLimit == 0", "all", "", "drops.ByteLimit", 0, true},
		{"honest.chat.drops.ChannelLimit < 5", "honest", "chat", "drops.ChannelLimit", 5, true},
		{"honest.p99 < fast", "", "", "", 0, false},
		{"honest.drop_rate 0.1", "", "", "", 0, false},
		{"drop_rate < 1", "", "", "", 0, false},
		{"hostile.session.dropped >= 1", "hostile", "session", "dropped", 1, true},
		{"hostile.session.drops.Oversize >= 1", "hostile", "session", "drops.Oversize", 1, true},
		{"hostile.session.admitted_per_s <= 5", "", "", "", 0, false}, // always 0: could never fail
		{"hostile.session.accepted == 0", "", "", "", 0, false},
		{"hostile.session.p99 < 1s", "", "", "", 0, false},
	} {
		th, err := ParseThreshold(c.in)
		if !c.ok {
			assert.Error(t, err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		assert.Equal(t, c.pop, th.Population, c.in)
		assert.Equal(t, c.kind, th.Kind, c.in)
		assert.Equal(t, c.metric, th.Metric, c.in)
		assert.Equal(t, c.value, th.Value, c.in)
	}
	th, _ := ParseThreshold("x.p99 <= 5ms")
	assert.True(t, th.Holds(5e6))
	assert.False(t, th.Holds(5e6+1))
	assert.Equal(t, reports.UnitNs, th.Unit)
}

func TestBehaviourErrors(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"    behaviour: honest", "    behaviour: honets", `did you mean "honest"?`},
		{"    count: 3", "    count: 3\n    params:\n      tick_rat: 20", `populations[0].params.tick_rat: unknown field (did you mean "tick_rate"?)`},
		{"    count: 3", "    count: 3\n    params:\n      tick_rate: fast", `"fast" is not a valid number`},
		{"    count: 3", "    count: 3\n    params:\n      double_click: 2", "double_click"},
		// Nested parameters are named as the scenario writes them, at the
		// line and column of the bad value.
		{"    behaviour: honest\n    count: 3", "    behaviour: laggy\n    count: 3\n    params:\n      ladder: {base: 1s, factor: 0.5}",
			"t.yaml:16:34: populations[0].params.ladder.factor: 0.5: must be in [1, 100]"},
		{"    behaviour: honest\n    count: 3", "    behaviour: channel-hop\n    count: 3\n    params:\n      targets:\n        - {kind: move, rate: 5}\n        - {kind: chat, rate: 0}",
			"t.yaml:18:30: populations[0].params.targets[1].rate: 0: must be positive"},
	} {
		doc := strings.Replace(minimal, c.from, c.to, 1)
		_, err := Parse([]byte(doc), "t.yaml")
		require.Error(t, err, c.to)
		assert.Contains(t, err.Error(), c.want)
	}
	s, err := Parse([]byte(minimal), "t.yaml")
	require.NoError(t, err)
	assert.False(t, *s.Population[0].Hostile, "honest is not hostile by default")
}

// A policy file is one YAML document: a second one is refused, as package
// core refuses it, rather than ignored.
func TestPolicyFileWithTwoDocumentsIsRefused(t *testing.T) {
	dir := t.TempDir()
	pol := "channels:\n  - {name: move, class: input, rate: 30}\n---\nshadow: true\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "two.yaml"), []byte(pol), 0o644))
	doc := strings.Replace(minimal, "policy:\n  channels:\n    - name: move\n      class: input\n      rate: 30\n", "policy_file: two.yaml\n", 1)
	require.NotEqual(t, minimal, doc)
	file := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(file, []byte(doc), 0o644))
	_, err := Load(file)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "two.yaml:3:1: more than one YAML document")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "two.yaml"), []byte(pol[:strings.Index(pol, "---")]), 0o644))
	_, err = Load(file)
	assert.NoError(t, err, "the same policy as one document")
}

// An empty file, or one of comments alone, is said to be empty, not
// reported as the decoder's bare "EOF".
func TestParseEmptyFileSaysSo(t *testing.T) {
	for _, doc := range []string{"", "# nothing yet\n", "\n\n"} {
		_, err := Parse([]byte(doc), "e.yaml")
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "EOF")
		assert.Contains(t, err.Error(), "e.yaml: the file is empty")
	}
}

// A scenario file is one YAML document: a second one is refused at its
// line, as a policy file's is, rather than ignored.
func TestParseRefusesASecondDocument(t *testing.T) {
	_, err := Parse([]byte(minimal+"---\nname: other\n"), "t.yaml")
	require.Error(t, err)
	assert.Equal(t, "t.yaml:18:1: more than one YAML document: a scenario file holds one (a second would be ignored)", err.Error())
	_, err = Parse([]byte(minimal+"---\nname: [\n"), "t.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "t.yaml: a second YAML document: yaml: line")
	_, err = Parse([]byte(minimal+"---\n"), "t.yaml")
	assert.Error(t, err, "an empty second document")
	_, err = Parse([]byte("---\n"+minimal+"...\n"), "t.yaml")
	assert.NoError(t, err, "one document, with its markers")
}
