package core

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gopkg.in/yaml.v3"
)

// A budget whose rate is NaN (which leaves its burst unset) is refused,
// naming the rate: validation, the gate and the audit dereferenced the
// unset burst and panicked.
func TestNaNBudgetRateIsRefusedNotAPanic(t *testing.T) {
	for _, doc := range []string{"account: {rate: .nan}\n", "transport: {bytes: {rate: .nan}}\n"} {
		_, err := DecodePolicyYAML([]byte(doc))
		var pe *PolicyError
		require.True(t, errors.As(err, &pe), "%q: %v", doc, err)
		assert.Contains(t, pe.Path, "rate", doc)
	}
	p := testPolicy()
	p.Account = Budget{Rate: new(math.NaN())}
	require.Error(t, p.Validate())
	_, err := NewGate(p, 0)
	require.Error(t, err)
	assert.NotPanics(t, func() { Audit(p) })
}

// A fraction where an integer is wanted is refused, not truncated (cost
// 1.9 is not cost 1; inFlight -0.5 is not 0, which turns the cap off), and
// YAML and JSON word it alike, saying the number once.
func TestFractionInAnIntegerFieldIsRefused(t *testing.T) {
	for doc, want := range map[string]string{
		"channels: [{name: a, class: request, rate: 5, burst: 10, cost: 1.9}]\n":      "1.9 is not a valid integer of 0 or more",
		"channels: [{name: a, class: request, rate: 5, burst: 10, inFlight: -0.5}]\n": "-0.5 is not a valid integer of 0 or more",
		"strikes: {shedFactor: 2.5}\n":                                                "2.5 is not a valid integer of 0 or more",
	} {
		_, err := DecodePolicyYAML([]byte(doc))
		if assert.Error(t, err, doc) {
			assert.Contains(t, err.Error(), want, doc)
		}
	}
	_, err := DecodePolicyJSON([]byte(`{"channels": [{"name": "a", "class": "request", "rate": 5, "burst": 10, "cost": 1.9}]}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1.9 is not a valid integer of 0 or more")
}

// A whole number too big for its field says it is out of range and gives
// the range, in YAML and JSON alike (not "not a valid integer of 0 or
// more", which it is).
func TestIntegerOutOfRangeGivesTheRange(t *testing.T) {
	const want = "tables.addresses (line 1): 5000000000 is out of range (an integer from 0 to 4294967295)"
	_, err := DecodePolicyYAML([]byte("tables: {addresses: 5000000000}\n"))
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), want)
	}
	_, err = DecodePolicyJSON([]byte(`{"tables": {"addresses": 5000000000}}`))
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), want)
	}
}

// A value that does not fit its field is worded the same from YAML and
// JSON, and so is a mapping or a list where a scalar belongs.
func TestValueErrorsReadAlikeInYAMLAndJSON(t *testing.T) {
	for _, c := range []struct{ yaml, json, want string }{
		{"shadow: maybe\n", `{"shadow": "maybe"}`, `"maybe" is not a valid boolean (true or false)`},
		{"channels: [{name: a, cost: -1}]\n", `{"channels": [{"name": "a", "cost": -1}]}`, `-1 is not a valid integer of 0 or more`},
		{"shadow: {a: 1}\n", `{"shadow": {"a": 1}}`, "want boolean (true or false), got a mapping"},
	} {
		_, err := DecodePolicyYAML([]byte(c.yaml))
		if assert.Error(t, err, c.yaml) {
			assert.Contains(t, err.Error(), c.want, c.yaml)
		}
		_, err = DecodePolicyJSON([]byte(c.json))
		if assert.Error(t, err, c.json) {
			assert.Contains(t, err.Error(), c.want, c.json)
		}
	}
}

// A second YAML document is refused even when it does not parse.
func TestMalformedSecondYAMLDocumentIsRefused(t *testing.T) {
	_, err := DecodePolicyYAML([]byte("shadow: true\n---\nchannels: [ {name: x\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "second YAML document")
}

// inFlight above what the gate's int32 counter holds is refused: it would
// wrap negative and count nothing.
func TestInFlightAboveInt32IsRefused(t *testing.T) {
	p := testPolicy()
	p.Channels[kBuy].InFlight = 3e9
	err := p.Validate()
	var pe *PolicyError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, "channels[3].inFlight", pe.Path)
}

// The audit charges a message's cost once: a channel of 5 tokens/s and 10
// at 2 a message passes 2.5 messages/s and 5 at once, which an account of
// 8/s and the default frame burst hold, so there is no finding about
// either.
func TestAuditChargesCostOnce(t *testing.T) {
	p := Policy{
		Channels: []Channel{{Name: "x", Class: ClassRequest, Rate: new(5.0), Burst: new(10.0), Cost: new(uint64(2))}},
		Account:  Budget{Rate: new(8.0), Burst: new(100.0)},
	}
	assert.Empty(t, findings(Audit(p), FindingRateUnreachable, "x"))
	p.Channels[0].Rate, p.Channels[0].Burst = new(100.0), new(200.0)
	p.Account = Budget{Rate: new(1000.0), Burst: new(1000.0)}
	for _, f := range findings(Audit(p), FindingBurstUnreachable, "x") {
		assert.NotContains(t, f.String(), "frame burst", "100 messages at once, under the frame burst 128")
	}
}

// A channel may not take the name of one of the gate's stats rows.
func TestChannelNamedLikeAStatsRowIsRefused(t *testing.T) {
	for _, name := range []string{"(unknown)", "(transport)", "(session)"} {
		p := testPolicy()
		p.Channels[0].Name = name
		err := p.Validate()
		var pe *PolicyError
		require.True(t, errors.As(err, &pe), "%s: %v", name, err)
		assert.Equal(t, "channels[0].name", pe.Path)
	}
}

// Of two denials that race to start one lockout, exactly one counts it.
func TestLockUntilStartsOnce(t *testing.T) {
	var l lockState
	const now = int64(1000)
	assert.True(t, l.lockUntil(now+10, now), "the first starts it")
	assert.False(t, l.lockUntil(now+10, now), "the second, with the same deadline, does not")
	assert.False(t, l.lockUntil(now+20, now+1), "extending a running lockout does not start one")
	assert.True(t, l.lockUntil(now+100, now+50), "after it ended, a new one starts")
}

// A policy file is one YAML document: no document is nil for the caller
// to call empty (DecodePolicyYAML: "empty document"), a second is refused
// at its line, even one that does not parse.
func TestPolicyDocumentIsOneDocument(t *testing.T) {
	doc, err := PolicyDocument(nil)
	require.NoError(t, err)
	assert.Nil(t, doc)
	_, err = DecodePolicyYAML(nil)
	assert.ErrorContains(t, err, "empty document")

	one := "channels:\n  - {name: move, class: input, rate: 30}\n"
	doc, err = PolicyDocument([]byte(one))
	require.NoError(t, err)
	require.NotNil(t, doc)
	for _, second := range []string{"---\nshadow: true\n", "---\n[unclosed\n"} {
		_, err = PolicyDocument([]byte(one + second))
		var pe *PolicyError
		require.ErrorAs(t, err, &pe, second)
		assert.Equal(t, 3, pe.Line, second)
		_, err = DecodePolicyYAML([]byte(one + second))
		assert.Error(t, err, "DecodePolicyYAML refuses it too")
	}
}

// CheckPolicyNode checks the fields of a policy without its limits, so a
// partial one passes; its errors carry the node's line and column, and an
// unknown field the known one it was probably meant to be.
func TestCheckPolicyNodeGivesPositionAndSuggestion(t *testing.T) {
	check := func(doc string) error {
		var n yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte(doc), &n))
		return CheckPolicyNode(&n)
	}
	assert.NoError(t, check("channels:\n  - {name: move}\n"), "a partial policy")
	for _, c := range []struct {
		doc, path       string
		line, col       int
		msg, suggestion string
	}{
		{"account:\n  rtae: 5\n", "account.rtae", 2, 3, `unknown field "rtae" in Budget`, "rate"},
		{"account: {rate: 5, rate: 6}\n", "account.rate", 1, 20, "repeated field", ""},
		{"channels:\n  - name: move\n    class: inptu\n", "channels[0].class", 3, 12, "inptu", ""},
		{"account: &b {rate: 5}\naddress:\n  <<: *b\n", "address.<<", 3, 3, "merge keys (<<) are not supported", ""},
		{"shadow: maybe\n", "shadow", 1, 9, `"maybe" is not a valid boolean`, ""},
		{"channels:\n  - {name: move, cost: -1}\n", "channels[0].cost", 2, 24, `-1 is not a valid integer of 0 or more`, ""},
		{"account: {rate: fast}\n", "account.rate", 1, 17, `"fast" is not a valid number`, ""},
	} {
		var pe *PolicyError
		require.ErrorAs(t, check(c.doc), &pe, c.doc)
		assert.Equal(t, c.path, pe.Path, c.doc)
		assert.Equal(t, [2]int{c.line, c.col}, [2]int{pe.Line, pe.Col}, c.doc)
		assert.Contains(t, pe.Msg, c.msg, c.doc)
		assert.Equal(t, c.suggestion, pe.Suggestion, c.doc)
	}
}
