package scenarios

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What validates must mean what was written: each of these is refused,
// naming the field, rather than run to measure nothing.
func TestValidateRefusesWhatCannotMeanWhatWasWritten(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty.yaml"), nil, 0o644))
	const pops = "populations:\n  - {name: honest, behaviour: honest, count: 2}\n"
	game, err := filepath.Abs("policies/game.yaml")
	require.NoError(t, err)
	withGame := "name: t\nduration: 2s\npolicy_file: " + game + "\n"
	cases := []struct{ name, doc, want string }{
		{"empty inline policy", "name: t\nduration: 2s\npolicy:\n" + pops, "policy: is empty"},
		{"empty policy file", "name: t\nduration: 2s\npolicy_file: empty.yaml\n" + pops, "empty.yaml is empty"},
		{"misspelt kind", withGame + pops + "thresholds:\n  - honest.chta.drop_rate < 1%\n", `no message kind named "chta" (did you mean "chat"?)`},
		{"kind on a client metric", withGame + pops + "thresholds:\n  - honest.move.lockouts == 0\n", "lockouts counts clients"},
		{"population named all", withGame + "populations:\n  - {name: all, behaviour: honest, count: 2}\n", `"all" cannot be named in a threshold`},
		{"population with a comparison", withGame + "populations:\n  - {name: eu<1, behaviour: honest, count: 2}\n", `"eu<1" cannot be named in a threshold`},
		{"population with a dot", withGame + "populations:\n  - {name: eu.west, behaviour: honest, count: 2}\n", `"eu.west" cannot be named in a threshold`},
		{"fractional count", withGame + "populations:\n  - {name: honest, behaviour: honest, count: 2.5}\n", `2.5 is not a valid integer`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc), filepath.Join(dir, "s.yaml"))
		if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}
}

// What the harness would refuse at run time is refused by Check, naming
// the variant: a policy with no channel (policy: {}), and a channel named
// as one of the server's stats rows.
func TestCheckRefusesPoliciesTheHarnessCannotRun(t *testing.T) {
	const pops = "populations:\n  - {name: honest, behaviour: honest, count: 2}\n"
	for _, c := range []struct{ name, doc, want string }{
		{"no channel", "name: t\nduration: 2s\npolicy: {}\n" + pops, "the policy has no channels"},
		{"reserved channel name", "name: t\nduration: 2s\npolicy:\n  channels:\n    - {name: move, class: input}\nvariants:\n  - name: base\n  - name: odd\n    set:\n      channels:\n        - {name: (ping), class: input}\n" + pops, `variant "odd"`},
	} {
		s, err := Parse([]byte(c.doc), "s.yaml")
		require.NoError(t, err, c.name)
		_, err = s.Check(Options{})
		if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}
}

// A population whose behaviour sends a kind of message the policy variant
// has no channel for is refused, naming the population, its behaviour,
// the kind and the variant, with a close channel name if there is one:
// its clients would count every such message as dropped (NotSent). A
// kind the population's params turn off needs no channel.
func TestCheckRefusesAPolicyWithoutAChannelABehaviourSendsOn(t *testing.T) {
	const four = "policy:\n  channels:\n    - {name: move, class: input}\n    - {name: ability, class: input}\n    - {name: chat, class: request}\n    - {name: Purchase, class: request}\n"
	for _, c := range []struct{ name, doc, want string }{
		{"no variants", "name: t\nduration: 2s\npolicy:\n  channels:\n    - {name: move, class: input}\npopulations:\n  - {name: honest, behaviour: honest, count: 2}\n",
			`s.yaml:7:31: populations[0].behaviour: population "honest" (honest) sends ability, but the policy has no channel named "ability": ` +
				"every such message would count as dropped (NotSent) without reaching the server; add the channel, or turn ability off (params: {ability_every: -1s})"},
		{"a close name", "name: t\nduration: 2s\n" + four + "variants:\n  - name: a\npopulations:\n  - name: players\n    behaviour: laggy\n    count: 2\n",
			`s.yaml:13:16: populations[0].behaviour: population "players" (laggy) sends purchase, but policy variant "a" has no channel named "purchase" (did you mean "Purchase"?): ` +
				"every such message would count as dropped (NotSent) without reaching the server; add the channel, or turn purchase off (params: {purchase_every: -1s})"},
		{"a hostile population", "name: t\nduration: 2s\n" + four + "populations:\n  - {name: honest, behaviour: honest, count: 2, params: {purchase_every: -1s}}\n  - {name: flood, behaviour: hot-key, count: 2}\n",
			`s.yaml:11:30: populations[1].behaviour: population "flood" (hot-key) sends purchase, but the policy has no channel named "purchase" (did you mean "Purchase"?): ` +
				"every such message would count as dropped (NotSent) without reaching the server; add the channel"},
	} {
		s, err := Parse([]byte(c.doc), "s.yaml")
		require.NoError(t, err, c.name)
		_, err = s.Check(Options{})
		if assert.Error(t, err, c.name) {
			assert.Equal(t, c.want, err.Error(), c.name)
		}
	}
	doc := "name: t\nduration: 2s\npolicy:\n  channels:\n    - {name: move, class: input}\npopulations:\n" +
		"  - {name: honest, behaviour: honest, count: 2, params: {ability_every: -1s, chat_every: -1s, purchase_every: -1s}}\n"
	s, err := Parse([]byte(doc), "s.yaml")
	require.NoError(t, err)
	_, err = s.Check(Options{})
	assert.NoError(t, err, "the kinds the policy lacks are turned off")
}

// A threshold that no run could measure is refused when the scenario is
// read, at its line, saying why, rather than failed at every run as "not
// measured": a response time of an input kind, a kind or a raw row that
// no population it covers sends, a client metric of the other role.
func TestValidateRefusesThresholdsThatCannotBeMeasured(t *testing.T) {
	game, err := filepath.Abs("policies/game.yaml")
	require.NoError(t, err)
	head := "name: t\nduration: 2s\npolicy_file: " + game + "\npopulations:\n" +
		"  - {name: honest, behaviour: honest, count: 2, params: {purchase_every: -1s}}\n" +
		"  - {name: flood, behaviour: tiny-flood, count: 2}\nthresholds:\n  - honest.chat.p99 < 1s\n"
	for _, c := range []struct{ thr, want string }{
		{"honest.move.p99 < 1s", "p99 has no value for move: it is sent as input, which gets no reply, so it has no response time; use send_lag_p99, or a kind sent as a request (chat, purchase)"},
		{"all.ability.max < 1s", "max has no value for ability: it is sent as input"},
		{"flood.raw.sent >= 0", `population "flood" (tiny-flood) writes no raw bytes, so there is no raw row (only bad-length, malformed and slowloris write them)`},
		{"all.raw.dropped == 0", "no population writes raw bytes, so there is no raw row"},
		{"honest.purchase.sent >= 0", `population "honest" (honest) sends no purchase, so purchase.sent has no value`},
		{"honest.cutoff_max < 1s", `cutoff_max has no value: it times hostile clients being cut off, and population "honest" is honest; use false_disconnects or lockouts for an honest population`},
		{"flood.lockouts == 0", `lockouts has no value: it counts honest clients, and population "flood" is hostile; use cutoff_p50 or cutoff_max for a hostile population`},
	} {
		_, err := Parse([]byte(head+"  - "+c.thr+"\n"), "s.yaml")
		if assert.Error(t, err, c.thr) {
			assert.Contains(t, err.Error(), "s.yaml:9:5: thresholds[1]: "+c.want, c.thr)
		}
	}
	for _, thr := range []string{"all.cutoff_max < 1s", "all.lockouts == 0", "flood.move.sent > 0", "all.chat.p99 < 1s", "honest.ping.p99 < 1s", "honest.move.send_lag_p99 < 1s"} {
		_, err := Parse([]byte(head+"  - "+thr+"\n"), "s.yaml")
		assert.NoError(t, err, thr)
	}
}

// A threshold's unknown population is named with the populations there
// are, and the close one.
func TestThresholdUnknownPopulationSuggests(t *testing.T) {
	game, err := filepath.Abs("policies/game.yaml")
	require.NoError(t, err)
	doc := "name: t\nduration: 2s\npolicy_file: " + game + "\npopulations:\n  - {name: honest, behaviour: honest, count: 2}\n" +
		"  - {name: flood, behaviour: tiny-flood, count: 2}\nthresholds:\n  - flod.sent > 0\n"
	_, err = Parse([]byte(doc), "s.yaml")
	require.Error(t, err)
	assert.Equal(t, `s.yaml:8:5: thresholds[0]: no population named "flod" (have honest, flood, or all) (did you mean "flood"?)`, err.Error())
}
