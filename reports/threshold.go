package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// JSON has no NaN or infinities, but a threshold's value may be either: NaN
// when the metric could not be computed (nothing was measured), +Inf when a
// hostile client was never cut off. In files they are the strings "NaN",
// "+Inf" and "-Inf"; finite values are numbers.

// MarshalJSON encodes t with a non-finite Value as a string.
func (t Threshold) MarshalJSON() ([]byte, error) {
	type plain Threshold
	aux := struct {
		plain
		Value any `json:"value"`
	}{plain(t), jsonFloat(t.Value)}
	return json.Marshal(aux)
}

// UnmarshalJSON decodes a threshold, accepting "NaN", "+Inf" and "-Inf" for
// its value and rejecting unknown fields.
func (t *Threshold) UnmarshalJSON(b []byte) error {
	type plain Threshold
	aux := struct {
		*plain
		Value json.RawMessage `json:"value"`
	}{plain: (*plain)(t)}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		return &thresholdError{err}
	}
	v, err := parseJSONFloat(aux.Value)
	if err != nil {
		return &thresholdError{fmt.Errorf("%q: value: %w", t.Expr, err)}
	}
	t.Value = v
	return nil
}

func jsonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return f
}

func parseJSONFloat(raw json.RawMessage) (float64, error) {
	if len(raw) == 0 {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		switch s {
		case "NaN":
			return math.NaN(), nil
		case "+Inf":
			return math.Inf(1), nil
		case "-Inf":
			return math.Inf(-1), nil
		}
		return 0, fmt.Errorf("%q is not a number, \"NaN\", \"+Inf\" or \"-Inf\"", s)
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, fmt.Errorf("%s is not a number", raw)
	}
	return f, nil
}

// FormatThresholdValue formats a threshold's measured value in its unit,
// for the report and the terminal alike: "not measured" (NaN), "never"
// (+Inf: a client never cut off), a fraction with its percentage, a
// duration with formatDuration (nil: the report's own), else six
// significant digits and the unit.
func FormatThresholdValue(t Threshold, formatDuration func(ns float64) string) string {
	switch {
	case math.IsNaN(t.Value):
		return "not measured"
	case math.IsInf(t.Value, 1):
		return "never"
	case math.IsInf(t.Value, -1):
		return "−∞"
	}
	v := strconv.FormatFloat(t.Value, 'g', 6, 64)
	switch unit := thresholdUnit(t); unit {
	case UnitNs:
		if formatDuration == nil {
			formatDuration = formatNs
		}
		return formatDuration(t.Value)
	case UnitFraction:
		return v + " (" + FormatPercent(t.Value) + ")"
	case "":
		return v
	default:
		return v + " " + unit
	}
}

// thresholdUnit is t's unit for display: its own, or for a threshold
// written before units were recorded for counts and rates (Unit ""), the
// unit of the metric its expression names, so that no measured value is a
// bare number: messages or bytes per second, messages, clients, sessions.
func thresholdUnit(t Threshold) string {
	if t.Unit != "" {
		return t.Unit
	}
	lhs, _, _ := strings.Cut(strings.TrimSpace(t.Expr), " ")
	parts := strings.Split(lhs, ".")
	metric := parts[len(parts)-1]
	if len(parts) >= 2 && parts[len(parts)-2] == "drops" {
		metric = "drops"
	}
	session := slices.Contains(parts, SessionKind)
	switch metric {
	case "admitted_per_s":
		return "msg/s"
	case "admitted_bytes_per_s":
		return "B/s"
	case "false_disconnects", "lockouts":
		return "clients"
	case "sent", "accepted", "dropped", "drops":
		if session {
			return "sessions"
		}
		return "messages"
	}
	return ""
}

// thresholdError is an error from a threshold's own decoding: the offsets
// and field paths of the JSON errors it wraps count from the threshold,
// not from the file.
type thresholdError struct{ err error }

func (e *thresholdError) Error() string { return "threshold: " + e.err.Error() }

func (e *thresholdError) Unwrap() error { return e.err }
