package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A policy error is the variant's set's where the set wrote the field, or
// the field above one the policy leaves out, and the base policy's
// otherwise, as the error's file and path say.
func TestPolicyErrorsAreTheSetsWhereTheSetWroteThem(t *testing.T) {
	const move = "channels:\n  - {name: move, class: input, rate: 30}\n"
	for _, c := range []struct{ name, policy, set, want string }{
		// A list whose items are not all named is replaced whole: its
		// items are the set's, at the set's indices.
		{"a list the set replaces whole", move,
			"channels: [{name: chat, class: input, rate: 5}, {class: input, rate: -5}]",
			"s.yaml:7:55: variants[0].set.channels[1].name: is required\n" +
				"s.yaml:7:76: variants[0].set.channels[1].rate: -5 must be greater than 0"},
		{"a list the base does not name throughout", "channels:\n  - {class: input, rate: 30}\n",
			"channels: [{name: move, rate: -5}]",
			"s.yaml:7:18: variants[0].set.channels[0].class: is required (input, request or predicted)\n" +
				"s.yaml:7:37: variants[0].set.channels[0].rate: -5 must be greater than 0"},
		// A named item merges into the base's item of that name, at the
		// base's index (0 here); the error gives its index in the set.
		{"a named item at the set's second index", move,
			"channels: [{name: chat, class: input, rate: 5}, {name: move, rate: -5}]",
			"s.yaml:7:74: variants[0].set.channels[1].rate: -5 must be greater than 0"},
		// Core reports a defaulted field at its parent's line: the set's
		// where the set alone writes the parent, the base's where both
		// do (the merged mapping is the base's, on its line: line 7 of
		// the policy file, as the set's is of s.yaml).
		{"a defaulted field under a mapping the set alone writes", move,
			"strikes: {ladder: {shed: 100}}",
			"s.yaml:7:25: variants[0].set.strikes.ladder.drop: must be greater than shed (100)"},
		{"a defaulted field under a mapping both write", move + "# 3\n# 4\n# 5\n# 6\nstrikes: {ladder: {warn: 1}}\n",
			"strikes: {ladder: {shed: 100}}",
			`p.yaml:7:19: strikes.ladder.drop: must be greater than shed (100) (with the set of policy variant "v")`},
		// A whole value the set writes as an alias is the set's, whether
		// the base has none (the alias is copied) or the merge resolved
		// it over the base's.
		{"an alias for a value the base lacks", move,
			"{account: &a {rate: -5}, address: *a}",
			"s.yaml:7:27: variants[0].set.account.rate: -5 must be greater than 0\n" +
				"s.yaml:7:27: variants[0].set.address.rate: -5 must be greater than 0"},
		{"an alias merged over the base's value", move + "address: {rate: 60, burst: 120}\n",
			"{account: &a {rate: -5}, address: *a}",
			"s.yaml:7:27: variants[0].set.account.rate: -5 must be greater than 0\n" +
				"s.yaml:7:27: variants[0].set.address.rate: -5 must be greater than 0"},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, policyErrorOf(t, c.policy, c.set)) })
	}
}

// policyErrorOf loads a scenario whose base policy is policy, in the file
// p.yaml, and whose one variant, v, has set on line 7 of s.yaml; it
// returns the error of its policies (or of reading it, if it is refused
// then), the folder left out of file names.
func policyErrorOf(t *testing.T, policy, set string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(policy), 0o644))
	scen := "name: n\nduration: 3s\npolicy_file: p.yaml\nvariants:\n  - name: v\n    set:\n      " + set + "\npopulations:\n  - {name: h, behaviour: honest, count: 1}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(scen), 0o644))
	s, err := Load(filepath.Join(dir, "s.yaml"))
	if err == nil { // else refused when read
		_, err = s.Policies()
	}
	require.Error(t, err)
	return strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
}

// A null in a set writes nothing, where the base has a value and where it
// has none: a field it leaves unset is reported as core reports any unset
// field, at its parent, whose file is the set's where the set alone wrote
// the parent. (The merge once kept a null the base lacked, and core then
// reported it at the set's line but in the base's file.)
func TestPolicyErrorsAtASetsNulls(t *testing.T) {
	const move = "channels:\n  - {name: move, class: input, rate: 30}\n"
	for _, c := range []struct{ name, policy, set, want string }{
		{"a null in the set's new item", move,
			"channels: [{name: chat, class: ~, rate: 5}]",
			`s.yaml:7:25: variants[0].set.channels[0].name: no channel named "chat" in the base policy (have move): to add a channel, give its class too`},
		{"a null for a field the base's item lacks", "channels:\n  - {name: move, rate: 30}\n",
			"channels: [{name: move, class: ~}]",
			`p.yaml:2:5: channels[0].class: is required (input, request or predicted) (with the set of policy variant "v")`},
		{"a null under a mapping the set alone writes", move,
			"strikes: {ladder: {shed: 100, drop: ~}}",
			"s.yaml:7:25: variants[0].set.strikes.ladder.drop: must be greater than shed (100)"},
		// An alias whose anchor holds a null is copied without the null,
		// at the alias's line (12), not the anchor's (8).
		{"an alias to an anchor that holds a null", "channels:\n  - {class: input, rate: 30}\n",
			"channels:\n        - &c\n          rate: 5\n          burst: ~\n        # 11\n        - *c",
			"s.yaml:8:11: variants[0].set.channels[0].name: is required\n" +
				"s.yaml:8:11: variants[0].set.channels[0].class: is required (input, request or predicted)\n" +
				"s.yaml:12:11: variants[0].set.channels[1].name: is required\n" +
				"s.yaml:12:11: variants[0].set.channels[1].class: is required (input, request or predicted)"},
		// A null name names nothing: the set's list is not named
		// throughout, so it replaces the base's whole.
		{"a null name", move,
			"channels: [{name: ~, class: input, rate: 5}]",
			"s.yaml:7:18: variants[0].set.channels[0].name: is required"},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, policyErrorOf(t, c.policy, c.set)) })
	}
}

// A null strike weight the set writes over a base without strikes leaves
// the weight at its default, as it would over a base that sets one: a null
// the merge kept would reach core as a weight of 0.
func TestSetNullKeepsTheDefault(t *testing.T) {
	dir := t.TempDir()
	scen := "name: n\nduration: 3s\npolicy:\n  channels:\n    - {name: move, class: input, rate: 30}\nvariants:\n" +
		"  - name: v\n    set:\n      strikes: {weights: {ChannelLimit: ~}}\n" +
		"  - name: w\n    set:\n      channels: [{name: move, rate: ~}]\n" +
		"populations:\n  - {name: h, behaviour: honest, count: 1}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(scen), 0o644))
	s, err := Load(filepath.Join(dir, "s.yaml"))
	require.NoError(t, err)
	ps, err := s.Policies()
	require.NoError(t, err)
	require.Len(t, ps, 2)
	_, set := ps[0].Policy.Strikes.Weights[core.ChannelLimit]
	assert.False(t, set, "a null weight reached the policy: %v", ps[0].Policy.Strikes.Weights)
	require.Len(t, ps[1].Policy.Channels, 1)
	require.NotNil(t, ps[1].Policy.Channels[0].Rate)
	assert.Equal(t, 30.0, *ps[1].Policy.Channels[0].Rate, "a null over the base's rate keeps it")
}

// A channel a variant's set names that the base policy lacks is refused
// when the scenario is read, at its name, with the close base name: an
// item without a class (it would merge into nothing), or a name close to
// a base channel's (it would be added beside the channel meant, leaving
// that one as the base has it). A complete channel of a name of its own
// is added.
func TestVariantChannelTheBaseLacks(t *testing.T) {
	const base = "name: n\nduration: 3s\npolicy:\n  channels:\n    - {name: move, class: input}\n    - {name: chat, class: request}\nvariants:\n  - name: v\n    set:\n      channels: "
	const pops = "\npopulations:\n  - {name: h, behaviour: honest, count: 1}\n"
	for _, c := range []struct{ set, want string }{
		{"[{name: mvoe, rate: 24}]", `s.yaml:10:25: variants[0].set.channels[0].name: no channel named "mvoe" in the base policy: a set merges channels by name, and a new one this close to a base channel's name is taken for a misspelling (did you mean "move"?)`},
		{"[{name: move, rate: 20}, {name: mvoe, class: input, rate: 24}]", `s.yaml:10:49: variants[0].set.channels[1].name: no channel named "mvoe" in the base policy: a set merges channels by name, and a new one this close to a base channel's name is taken for a misspelling (did you mean "move"?)`},
		{"[{name: trade, rate: 2}]", `s.yaml:10:25: variants[0].set.channels[0].name: no channel named "trade" in the base policy (have chat, move): to add a channel, give its class too`},
	} {
		_, err := Parse([]byte(base+c.set+pops), "s.yaml")
		if assert.Error(t, err, c.set) {
			assert.Equal(t, c.want, err.Error(), c.set)
		}
	}
	s, err := Parse([]byte(base+"[{name: trade, class: request, rate: 2}]"+pops), "s.yaml")
	require.NoError(t, err)
	ps, err := s.Policies()
	require.NoError(t, err)
	require.Len(t, ps[0].Policy.Channels, 3, "a complete new channel is added")
}
