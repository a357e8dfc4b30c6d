package scenarios

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/reports"
)

// Threshold is one success criterion, written as
//
//	<population>[.<kind>].<metric> <op> <value>
//
// for example `honest.drop_rate < 0.001`, `hostile.admitted_per_s <= 300`
// or `honest.chat.p99 < 50ms`. The population "all" means every client.
// Values are numbers, percentages (0.1%) or durations (50ms). See Metrics
// for the metric names.
type Threshold struct {
	Text       string
	Population string
	Kind       string // "" for all kinds of message (the session row is named, never implied)
	Metric     string
	Op         string
	Value      float64 // durations in nanoseconds, percentages as fractions
	// Unit is the metric's unit as reports.Threshold takes it:
	// reports.UnitNs for a duration, reports.UnitFraction for a share,
	// else "".
	Unit string
}

// Metrics lists the metric names a threshold may use, with their meaning.
var Metrics = map[string]string{
	"sent":                 "messages the clients meant to send (of the raw row, x.raw.sent: writes of raw bytes; of the session row, x.session.sent: sessions the server ended)",
	"accepted":             "messages the server accepted (of the raw row: frames the server read from raw bytes)",
	"dropped":              "messages not accepted, for any reason (of the raw row: writes never sent or lost, and frames the server refused)",
	"drop_rate":            "dropped ÷ sent (a fraction; 0.1% is 0.001), whatever the reason; none for the raw row, nor over a population that writes raw bytes (bad-length, malformed, slowloris), whose sends count writes while the server's drops count frames: name a kind of message there (x.hello.drop_rate)",
	"limited_rate":         "dropped by the server's limits ÷ sent: drop_rate without what only the client saw (never sent, timeouts, disconnects); none where drop_rate has none",
	"admitted_per_s":       "accepted messages per second of measured time",
	"accepted_per_client":  "accepted messages per client of the populations over the measured time (per account where each client has its own): a limit of rate r and burst b kept per account holds it to r × measured seconds + b",
	"admitted_bytes_per_s": "accepted bytes per second of measured time, estimated per kind as bytes written × accepted ÷ frames written (exact when a kind's frames are one size)",
	"p50":                  "median response time, from the intended send time",
	"p90":                  "90th percentile response time",
	"p99":                  "99th percentile response time",
	"p999":                 "99.9th percentile response time",
	"max":                  "largest response time",
	"false_disconnects":    "honest clients the server disconnected (a defect); no value for a hostile population",
	"lockouts":             "honest clients locked out (a defect); no value for a hostile population",
	"cutoff_p50":           "median over a hostile population's clients that took part (connected at least once) of the time from a client's first message until it was cut off (never, if fewer than half were); over several populations, the largest of their medians; no value for an honest population",
	"cutoff_max":           "longest time until a client was cut off, over all of a hostile population's clients that took part (connected at least once; never, if one was not cut off); no value for an honest population",
	"send_lag_p99":         "99th percentile of how late sends left versus their schedule",
}

// populationMetrics are the metrics of a population's clients, which no
// kind of message has: a threshold may not name a kind with them, and
// MetricValue has none for one.
var populationMetrics = map[string]bool{"false_disconnects": true, "lockouts": true, "cutoff_p50": true, "cutoff_max": true}

// sessionMetrics are the metrics the session row (sessions the server
// ended, reports.SessionKind) has, with every drops.<reason>: nothing on
// it is accepted or timed, so any other metric would read 0 (a threshold
// that cannot fail) or nothing. MetricValue has none of the others there.
var sessionMetrics = map[string]bool{"sent": true, "dropped": true}

// sessionMetric reports whether metric has a value on the session row.
func sessionMetric(metric string) bool {
	return sessionMetrics[metric] || strings.HasPrefix(metric, "drops.")
}

// fractionMetrics are the metrics that are shares of what was sent,
// written as fractions and shown as percentages too. None has a value on
// the raw row, nor over a population that writes raw bytes: see rawRate.
var fractionMetrics = map[string]bool{"drop_rate": true, "limited_rate": true}

// rawNoRate is why a share has no value over raw bytes: the row counts
// its sends in writes and the server's drops in frames (see
// reports.RawKind).
const rawNoRate = "counted in writes when sent and in frames when the server decides them"

var durationMetrics = map[string]bool{"p50": true, "p90": true, "p99": true, "p999": true, "max": true,
	"cutoff_p50": true, "cutoff_max": true, "send_lag_p99": true}

// ParseThreshold parses one threshold expression.
func ParseThreshold(text string) (Threshold, error) {
	t := Threshold{Text: strings.TrimSpace(text)}
	var lhs, rhs string
	for _, op := range []string{"<=", ">=", "==", "<", ">"} {
		if i := strings.Index(t.Text, op); i > 0 {
			lhs, rhs, t.Op = strings.TrimSpace(t.Text[:i]), strings.TrimSpace(t.Text[i+len(op):]), op
			break
		}
	}
	if t.Op == "" {
		return t, fmt.Errorf("%q has no comparison (<, <=, >, >=, ==)", text)
	}
	parts := strings.Split(lhs, ".")
	for _, p := range parts {
		if p == "" {
			return t, fmt.Errorf("%q: want population[.kind].metric, with no empty part", lhs)
		}
	}
	metricIdx := len(parts) - 1
	// drops.<Reason> is a metric of two segments.
	if len(parts) >= 3 && parts[len(parts)-2] == "drops" {
		metricIdx = len(parts) - 2
	}
	switch metricIdx {
	case 1:
		t.Population = parts[0]
	case 2:
		t.Population, t.Kind = parts[0], parts[1]
	default:
		return t, fmt.Errorf("%q: want population[.kind].metric", lhs)
	}
	t.Metric = strings.Join(parts[metricIdx:], ".")
	if _, ok := Metrics[t.Metric]; !ok && !strings.HasPrefix(t.Metric, "drops.") {
		// Sorted, so that a tie between two close names always suggests
		// the same one.
		return t, fmt.Errorf("unknown metric %q%s", t.Metric, didYouMean(t.Metric, slices.Sorted(maps.Keys(Metrics))))
	}
	if reason, ok := strings.CutPrefix(t.Metric, "drops."); ok && !slices.Contains(reports.KnownReasons(), reason) {
		return t, fmt.Errorf("unknown drop reason %q%s", reason, didYouMean(reason, reports.KnownReasons()))
	}
	if t.Kind != "" {
		// A misspelt kind would measure nothing at every run.
		k, err := behave.ParseKind(t.Kind)
		if err != nil {
			return t, fmt.Errorf("no message kind named %q%s", t.Kind, didYouMean(t.Kind, kindNames()))
		}
		if populationMetrics[t.Metric] {
			return t, fmt.Errorf("%s counts clients, not messages of a kind: write %s.%s", t.Metric, t.Population, t.Metric)
		}
		if k == behave.KindRaw && fractionMetrics[t.Metric] {
			return t, fmt.Errorf("%s has no value on the raw row: raw bytes are %s; use sent, accepted, dropped or drops.<reason>", t.Metric, rawNoRate)
		}
		if k == behave.KindSession && !sessionMetric(t.Metric) {
			return t, fmt.Errorf("%s has no value on the session row (sessions the server ended): use %s or drops.<reason>",
				t.Metric, strings.Join(slices.Sorted(maps.Keys(sessionMetrics)), ", "))
		}
	}
	switch {
	case durationMetrics[t.Metric]:
		t.Unit = reports.UnitNs
	case fractionMetrics[t.Metric]:
		t.Unit = reports.UnitFraction
	}
	v, err := parseValue(rhs, t.Unit)
	if err != nil {
		return t, fmt.Errorf("%s: %v", t.Metric, err)
	}
	t.Value = v
	return t, nil
}

// decidable refuses a threshold whose value no measurement could reach
// (the scenario checks it after what names a population and a kind, so
// that a threshold that measures nothing is told so first): every metric
// is 0 or more, and a share is at most 100%, so `drop_rate < 200%` always
// holds and `drop_rate < -1%` never does; nor can `< 0`, or `> 100%` of a
// share, ever pass. A comparison that takes in the whole range at its
// edge (`>= 0`, `<= 100%`) is kept: it records the value and fails
// nothing, as written.
func (t Threshold) decidable() error {
	lo, hi, rng := 0.0, math.Inf(1), "0 or more"
	if t.Unit == reports.UnitFraction {
		hi, rng = 1, "a share from 0% to 100%"
	}
	v := t.Value
	var always, never bool
	switch t.Op {
	case "<":
		always, never = v > hi, v <= lo
	case "<=":
		always, never = v > hi, v < lo
	case ">":
		always, never = v < lo, v >= hi
	case ">=":
		always, never = v < lo, v > hi
	case "==":
		never = v < lo || v > hi
	}
	switch {
	case always:
		return fmt.Errorf("%s %s %s can never fail: %s is %s", t.Metric, t.Op, t.valueText(), t.Metric, rng)
	case never:
		return fmt.Errorf("%s %s %s can never pass: %s is %s", t.Metric, t.Op, t.valueText(), t.Metric, rng)
	}
	return nil
}

// valueText writes the threshold's value as it was written, in its unit.
func (t Threshold) valueText() string {
	switch t.Unit {
	case reports.UnitFraction:
		return strconv.FormatFloat(t.Value*100, 'g', -1, 64) + "%"
	case reports.UnitNs:
		return time.Duration(t.Value).String()
	}
	return strconv.FormatFloat(t.Value, 'g', -1, 64)
}

// parseValue reads a threshold's value in unit: a duration for UnitNs, a
// number or a percentage for UnitFraction, a number otherwise.
func parseValue(s, unit string) (float64, error) {
	if unit == reports.UnitNs {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (use a unit: 50ms)", s)
		}
		return float64(d), nil
	}
	if num, ok := strings.CutSuffix(s, "%"); ok {
		if unit != reports.UnitFraction {
			return 0, fmt.Errorf("%q: a percentage is only for a share (drop_rate, limited_rate)", s)
		}
		// Scaled by the exponent, rounded once: 0.7% is the float64 of
		// 0.007 (ParseFloat then /100 would round twice, to just below
		// it, and fail "<= 0.7%" at exactly 7 in 1000).
		mant, exp := num, 0
		if i := strings.IndexAny(num, "eE"); i >= 0 {
			e, err := strconv.Atoi(num[i+1:])
			if err != nil {
				return 0, fmt.Errorf("%q is not a percentage", s)
			}
			mant, exp = num[:i], e
		}
		f, err := strconv.ParseFloat(mant+"e"+strconv.Itoa(exp-2), 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a percentage", s)
		}
		return finite(s, f)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return finite(s, f)
}

// finite refuses NaN and infinities: a threshold against one can never
// fail, or never pass.
func finite(s string, f float64) (float64, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	return f, nil
}

// Holds reports whether value satisfies the threshold.
func (t Threshold) Holds(value float64) bool {
	switch t.Op {
	case "<":
		return value < t.Value
	case "<=":
		return value <= t.Value
	case ">":
		return value > t.Value
	case ">=":
		return value >= t.Value
	case "==":
		return value == t.Value
	}
	return false
}

// kindNames lists the message kinds a threshold may name.
func kindNames() []string {
	names := make([]string, 0, behave.NumKinds)
	for k := range behave.NumKinds {
		names = append(names, k.String())
	}
	return names
}
