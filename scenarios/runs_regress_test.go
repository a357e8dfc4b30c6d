package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/reports"
)

// A percentage holds at equality: "drop_rate <= 0.7%" with exactly 7 of
// 1000 dropped. Dividing the parsed number by 100 rounded twice, to just
// below 0.007, and 122 of the 999 values N.N% failed so.
func TestPercentThresholdsHoldAtEquality(t *testing.T) {
	for i := 1; i < 1000; i++ {
		for _, op := range []string{"<=", ">=", "=="} {
			th, err := ParseThreshold(fmt.Sprintf("x.drop_rate %s %d.%d%%", op, i/10, i%10))
			require.NoError(t, err)
			require.True(t, th.Holds(float64(i)/1000), "%s at exactly %d/1000", th.Text, i)
		}
	}
}

// A percentage is for a share only, and a threshold value is finite.
func TestThresholdValuesAreCheckedForTheMetric(t *testing.T) {
	for _, bad := range []string{"flood.admitted_per_s <= 10%", "honest.false_disconnects <= 1%", "honest.drop_rate < NaN", "flood.admitted_per_s <= inf", "honest.drop_rate <= 1e400%", "honest.drop_rate <= 1ex%"} {
		_, err := ParseThreshold(bad)
		assert.Error(t, err, bad)
	}
	for _, c := range []struct {
		text string
		want float64
	}{
		{"honest.limited_rate < 0.5%", 0.005}, {"honest.drop_rate < 0.001", 0.001}, {"flood.admitted_per_s <= 10", 10},
		{"honest.drop_rate <= 1e-3%", 1e-5}, {"honest.drop_rate <= 1E2%", 1}, {"honest.drop_rate <= .5%", 0.005},
	} {
		th, err := ParseThreshold(c.text)
		require.NoError(t, err, c.text)
		assert.Equal(t, c.want, th.Value, c.text)
	}
}

// A variant's set over a base value written as an alias merges into the
// value the alias names: the fields it does not set stay the base's.
func TestSetMergesOverAnAlias(t *testing.T) {
	src := `name: alias
duration: 3s
policy:
  channels:
    - &mv {name: move, class: input, rate: 30, burst: 30}
  account: &acct {rate: 60, burst: 120}
  address: *acct
variants:
  - name: addr
    set: {address: {rate: 100}, channels: [{name: move, rate: 20}]}
populations:
  - {name: honest, behaviour: honest, count: 1}
`
	s, err := Parse([]byte(src), "alias.yaml")
	require.NoError(t, err)
	ps, err := s.Policies()
	require.NoError(t, err)
	p := ps[0].Policy
	require.NotNil(t, p.Address.Burst)
	assert.Equal(t, 100.0, *p.Address.Rate)
	assert.Equal(t, 120.0, *p.Address.Burst, "the alias's burst")
	require.Len(t, p.Channels, 1)
	assert.Equal(t, 20.0, *p.Channels[0].Rate)
	assert.Equal(t, 30.0, *p.Channels[0].Burst)
}

// Cut-off times are measured for hostile populations: on an honest one
// the metric has no value, rather than "never", which let
// "laggy.cutoff_max > 19s" pass on nothing measured.
func TestCutoffOnAnHonestPopulationHasNoValue(t *testing.T) {
	res := reports.New(reports.Run{Scenario: "t", Duration: 10 * time.Second}, reports.Environment{})
	v, err := res.AddVariant("base", nil)
	require.NoError(t, err)
	v.AddPopulation("laggy", "laggy", reports.Honest, 4).Kind("move").Sent = 10
	f := v.AddPopulation("flood", "tiny-flood", reports.Hostile, 2)
	f.Kind("move").Sent = 10
	f.Summary.CutOff = reports.CutOffTimes([]time.Duration{time.Second}, 2)
	for _, m := range []string{"cutoff_p50", "cutoff_max"} {
		assert.True(t, math.IsNaN(MetricValue(res, v, "laggy", "", m)), m)
	}
	assert.Equal(t, float64(time.Second), MetricValue(res, v, "flood", "", "cutoff_p50"))
	assert.True(t, math.IsInf(MetricValue(res, v, "flood", "", "cutoff_max"), 1), "one flooder never cut off")
}

// Out-of-range latencies are clamped into the histograms and counted, and
// a variant that had any says its percentiles under-report.
func TestClampedLatenciesAreCounted(t *testing.T) {
	rec, err := record.NewRecorder([]string{"p"}, record.HistConfig{})
	require.NoError(t, err)
	rec.Record(0, behave.KindChat, record.Response, int64(time.Millisecond))
	assert.Empty(t, recorderInvalid(rec))
	rec.Record(0, behave.KindChat, record.Response, int64(2*time.Minute))
	rec.Record(0, behave.KindChat, record.Response, -5)
	assert.Equal(t, int64(2), rec.TotalClamped())
	assert.Zero(t, rec.TotalDropped())
	notes := recorderInvalid(rec)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "2 latency values fell outside the histograms' range")
}

// A worker that fell behind its schedule and never carried out some
// actions due before the end makes the run invalid, however small the
// share: its schedule was not replayed.
func TestOverdueActionsMakeTheRunInvalid(t *testing.T) {
	rec, err := record.NewRecorder([]string{"p"}, record.HistConfig{})
	require.NoError(t, err)
	assert.Empty(t, recorderInvalid(rec))
	rec.Stats.Overdue = 3
	notes := recorderInvalid(rec)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "3 actions due before the end were never carried out")
}

// A policy error names the file the field is written in: a variant's
// invalid set over a valid policy file is the scenario's error, at the
// set's line; what the set did not write is the policy file's, at its line.
func TestPolicyErrorsNameTheFileTheyAreIn(t *testing.T) {
	for _, c := range []struct {
		name, policy, set string
		want              []string // nil: no error
	}{
		{"the set's own field", "channels:\n  - {name: move, class: input, rate: 30}\naccount: {rate: 60, burst: 120}\n",
			"account: {rate: -5}", []string{"s.yaml:7:23: variants[0].set.account.rate: -5 must be greater than 0"}},
		{"the policy file's field", "channels:\n  - {name: move, class: input, rate: 30}\naccount: {rate: -60, burst: 120}\n",
			"channels: [{name: move, rate: 20}]", []string{"p.yaml:3:17: account.rate: -60", `(with the set of policy variant "v")`}},
		// A set that breaks a field it did not write.
		{"a field the set broke", "channels:\n  - {name: move, class: input, rate: 30}\nstrikes:\n  ladder: {warn: 1, shed: 2, drop: 3, disconnect: 4, lockout: 5}\n",
			"strikes: {ladder: {warn: 3}}", []string{"p.yaml:4:27: strikes.ladder.shed: must be greater than warn (3)", `(with the set of policy variant "v")`}},
		// The files number their lines apart: the set's line 7 is not
		// the policy file's.
		{"a line number both files have", "channels:\n  - name: move\n    class: input\n    rate: 30\naccount: {rate: 60, burst: 120}\naddress:\n  rate: -60\n",
			"account: {rate: 50}", []string{"p.yaml:7:9: address.rate: -60", `(with the set of policy variant "v")`}},
		{"a policy file every set completes", "channels:\n  - {name: move, class: input}\n",
			"channels: [{name: move, rate: 20}]", nil},
		// A named item is found in the set by its name, not its index,
		// and named at its own index there (the merged policy's is 1).
		{"a named item at another index", "channels:\n  - {name: move, class: input, rate: 30}\n  - {name: chat, class: request, rate: 1}\n",
			"channels: [{name: chat, rate: -5}]", []string{"s.yaml:7:37: variants[0].set.channels[0].rate: -5"}},
		// Every problem core finds is reported, each in its own file.
		{"problems in both files", "channels:\n  - {name: move, class: input, rate: -1}\naccount: {rate: -60, burst: 120}\n",
			"account: {rate: -5}", []string{"p.yaml:2:38: channels[0].rate: -1", "s.yaml:7:23: variants[0].set.account.rate: -5"}},
		// A field the base's item leaves out is the base's even when
		// that item's line is also the set's (7 in both files).
		{"a defaulted field on a line both files have", "# 1\n# 2\n# 3\n# 4\n# 5\nchannels:\n  - name: move\n    rate: 30\n",
			"channels: [{name: move, rate: 20}]", []string{"p.yaml:7:5: channels[0].class: is required", `(with the set of policy variant "v")`}},
		// A new item without its class: refused when the scenario is
		// read, at the set's line, as a name the base lacks.
		{"a field the set's new item lacks", "channels:\n  - {name: move, class: input, rate: 30}\n",
			"channels: [{name: chat, rate: 5}]", []string{`s.yaml:7:25: variants[0].set.channels[0].name: no channel named "chat" in the base policy (have move): to add a channel, give its class too`}},
		// A null in a set changes nothing: the field stays the base's,
		// even on a line both files have.
		{"a field the set nulls", "# 1\n# 2\n# 3\nchannels:\n  - {name: move, class: input, rate: 30}\n# 6\naccount: {rate: -60, burst: 120}\n",
			"account: {rate: ~}", []string{"p.yaml:7:17: account.rate: -60", `(with the set of policy variant "v")`}},
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(dir+"/p.yaml", []byte(c.policy), 0o644), c.name)
		scen := "name: n\nduration: 3s\npolicy_file: p.yaml\nvariants:\n  - name: v\n    set:\n      " + c.set + "\npopulations:\n  - {name: h, behaviour: honest, count: 1}\n"
		require.NoError(t, os.WriteFile(dir+"/s.yaml", []byte(scen), 0o644), c.name)
		s, err := Load(dir + "/s.yaml")
		if err == nil {
			_, err = s.Policies()
		}
		if c.want == nil {
			assert.NoError(t, err, c.name)
			continue
		}
		require.Error(t, err, c.name)
		for _, w := range c.want {
			assert.Contains(t, err.Error(), w, c.name)
		}
	}
}

// Run calls Ready once the scenario and options are checked, and before
// any variant runs: its error stops the run with nothing measured, and a
// refused option never reaches it.
func TestRunCallsReadyBetweenCheckAndRun(t *testing.T) {
	// Only moves: minimal's policy has no other channel.
	doc := strings.Replace(minimal, "    count: 3\n", "    count: 3\n    params: {ability_every: -1s, chat_every: -1s, purchase_every: -1s}\n", 1)
	require.NotEqual(t, minimal, doc)
	s, err := Parse([]byte(doc), "t.yaml")
	require.NoError(t, err)
	refuse := errors.New("cannot write the results")
	calls, ran := 0, false
	progress := func(string, int, int, time.Duration, time.Duration) { ran = true }
	ready := func() error {
		calls++
		assert.False(t, ran, "Ready called after a variant ran")
		return refuse
	}
	out, err := Run(context.Background(), s, Options{Ready: ready, Progress: progress})
	require.ErrorIs(t, err, refuse)
	assert.Nil(t, out)
	assert.Equal(t, 1, calls)
	assert.False(t, ran, "a variant ran after Ready refused")
	_, err = Run(context.Background(), s, Options{Driver: "udp", Ready: ready})
	require.ErrorIs(t, err, ErrOption)
	assert.Equal(t, 1, calls, "Ready is not called for a refused option")
}

// A variant whose set is null (set: with nothing after it) is the base
// policy unchanged, not an empty one.
func TestNullSetChangesNothing(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(minimal, "thresholds:", "variants:\n  - name: v\n    set:\nthresholds:", 1)), "t.yaml")
	require.NoError(t, err)
	ps, err := s.Policies()
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Len(t, ps[0].Policy.Channels, 1, "the base policy's channel")
}

// A null inside a set changes nothing either: "account:" with nothing
// after it keeps the base's account layer (it used to erase it, silently).
func TestNullInsideASetChangesNothing(t *testing.T) {
	doc := "name: t\nduration: 10s\npolicy:\n  channels:\n    - {name: move, class: input, rate: 30}\n" +
		"  account: {rate: 7, burst: 9}\n" +
		"variants:\n  - name: v\n    set:\n      account:\n      channels:\n        - name: move\n          rate:\n" +
		"populations:\n  - {name: h, behaviour: honest, count: 1}\n"
	s, err := Parse([]byte(doc), "t.yaml")
	require.NoError(t, err)
	ps, err := s.Policies()
	require.NoError(t, err)
	require.Len(t, ps, 1)
	p := ps[0].Policy
	if assert.NotNil(t, p.Account.Rate) && assert.NotNil(t, p.Account.Burst) {
		assert.Equal(t, 7.0, float64(*p.Account.Rate))
		assert.Equal(t, 9.0, float64(*p.Account.Burst))
	}
	require.Len(t, p.Channels, 1)
	if assert.NotNil(t, p.Channels[0].Rate) {
		assert.Equal(t, 30.0, float64(*p.Channels[0].Rate))
	}
}

// A set's value written as an alias is the set's, whether core reports it
// at the alias's line (the alias is the merged node: a key the base does
// not have) or at its anchor's (the merge resolved it over the base's
// value), even when the anchor is in the base policy.
func TestPolicyErrorsFollowASetsAlias(t *testing.T) {
	for _, c := range []struct{ name, base, set, want string }{
		{"over the base's value: the anchor's line", "  account: {rate: 60}\n", "account: {rate: *zero}",
			"t.yaml:8:26: variants[0].set.account.rate: 0 must be greater than 0"},
		{"a key the base lacks: the alias's line", "", "account: {rate: *zero}",
			"t.yaml:12:23: variants[0].set.account.rate: 0 must be greater than 0"},
	} {
		doc := "name: t\nduration: 10s\npolicy:\n  channels:\n    - name: move\n      class: input\n      rate: 30\n" +
			"  transport: {minCharge: &zero 0}\n" + c.base +
			"variants:\n  - name: v\n    set:\n      " + c.set + "\n" +
			"populations:\n  - {name: h, behaviour: honest, count: 1}\n"
		s, err := Parse([]byte(doc), "t.yaml")
		require.NoError(t, err, c.name)
		_, err = s.Policies()
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
}
