package scenarios

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen"
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
	rec, err := loadgen.NewRecorder([]string{"p"}, loadgen.HistConfig{})
	require.NoError(t, err)
	rec.Record(0, loadgen.KindChat, loadgen.Response, int64(time.Millisecond))
	assert.Empty(t, recorderInvalid(rec))
	rec.Record(0, loadgen.KindChat, loadgen.Response, int64(2*time.Minute))
	rec.Record(0, loadgen.KindChat, loadgen.Response, -5)
	assert.Equal(t, int64(2), rec.TotalClamped())
	assert.Zero(t, rec.TotalDropped())
	notes := recorderInvalid(rec)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "2 latency values fell outside the histograms' range")
}

// A variant's invalid set over a valid policy file is the scenario's
// error, at the set's line; an invalid policy file alone is that file's.
func TestPolicyErrorsNameTheFileTheyAreIn(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := dir + "/" + name
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		return path
	}
	write("good.yaml", "channels:\n  - {name: move, class: input, rate: 30}\naccount: {rate: 60, burst: 120}\n")
	write("bad.yaml", "channels:\n  - {name: move, class: input, rate: 30}\naccount: {rate: -60, burst: 120}\n")
	scen := func(pol string) string {
		return "name: n\nduration: 3s\npolicy_file: " + pol + "\nvariants:\n  - name: v\n    set:\n      account: {rate: -5}\npopulations:\n  - {name: h, behaviour: honest, count: 1}\n"
	}
	s, err := Load(write("s1.yaml", scen("good.yaml")))
	require.NoError(t, err)
	_, err = s.Policies()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "s1.yaml: policy variant \"v\" (its set, over")
	assert.Contains(t, err.Error(), "(line 7)")
	s, err = Load(write("s2.yaml", strings.Replace(scen("bad.yaml"), "account: {rate: -5}", "channels: [{name: move, rate: 20}]", 1)))
	require.NoError(t, err)
	_, err = s.Policies()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad.yaml: policy variant \"v\" (with the set in")
	assert.Contains(t, err.Error(), "account.rate (line 3)")

	// A set that breaks a field it did not write: the field's line is the
	// policy file's, and so is the name.
	write("ladder.yaml", "channels:\n  - {name: move, class: input, rate: 30}\nstrikes:\n  ladder: {warn: 1, shed: 2, drop: 3, disconnect: 4, lockout: 5}\n")
	s, err = Load(write("s3.yaml", "name: n\nduration: 3s\npolicy_file: ladder.yaml\nvariants:\n  - name: v\n    set:\n      strikes: {ladder: {warn: 3}}\npopulations:\n  - {name: h, behaviour: honest, count: 1}\n"))
	require.NoError(t, err)
	_, err = s.Policies()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ladder.yaml: policy variant \"v\" (with the set in")

	// A policy file's error on a line number that the set also spans is
	// still the policy file's: the files number their lines apart.
	write("addr.yaml", "channels:\n  - name: move\n    class: input\n    rate: 30\naccount: {rate: 60, burst: 120}\naddress:\n  rate: -60\n")
	s, err = Load(write("s5.yaml", strings.Replace(scen("addr.yaml"), "account: {rate: -5}", "account: {rate: 50}", 1)))
	require.NoError(t, err)
	_, err = s.Policies()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "addr.yaml: policy variant \"v\" (with the set in")
	assert.Contains(t, err.Error(), "address.rate (line 7)")

	// A policy file completed by every variant's set is not refused alone.
	write("partial.yaml", "channels:\n  - {name: move, class: input}\n")
	s, err = Load(write("s4.yaml", "name: n\nduration: 3s\npolicy_file: partial.yaml\nvariants:\n  - name: v\n    set:\n      channels: [{name: move, rate: 20}]\npopulations:\n  - {name: h, behaviour: honest, count: 1}\n"))
	require.NoError(t, err)
	_, err = s.Policies()
	assert.NoError(t, err)
}
