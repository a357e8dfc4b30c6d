package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
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
		return fmt.Errorf("threshold: %w", err)
	}
	v, err := parseJSONFloat(aux.Value)
	if err != nil {
		return fmt.Errorf("threshold %q: value: %w", t.Expr, err)
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

// nonFinite renders a non-finite value for the page; ok is false for a
// finite one.
func nonFinite(f float64) (string, bool) {
	switch {
	case math.IsNaN(f):
		return "not measured", true
	case math.IsInf(f, 1):
		return "∞", true
	case math.IsInf(f, -1):
		return "−∞", true
	}
	return strconv.FormatFloat(f, 'g', -1, 64), false
}
