package reports

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// A results file of schema version 5 (testdata/results-v5.json, written by
// the sluice of that version for scenarios/flood-mix.yaml) is still read:
// its NotSent drops become not_sent, out of sent and drops, the summaries
// are derived again, and it renders and writes as the current version.
func TestReadsVersion5File(t *testing.T) {
	data, err := os.ReadFile("testdata/results-v5.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"NotSent"`)) || !bytes.Contains(data, []byte(`"schema_version": 5`)) {
		t.Fatal("testdata is not a version 5 file with NotSent drops")
	}
	r, err := Unmarshal(data)
	if err != nil {
		t.Fatalf("version 5 file: %v", err)
	}
	if r.SchemaVersion != SchemaVersion {
		t.Errorf("read as version %d, want %d", r.SchemaVersion, SchemaVersion)
	}
	tiny := r.Variant("base").Population("tiny")
	if tiny == nil {
		t.Fatal("no population tiny")
	}
	// In version 5: sent 418500, of which 415872 NotSent, and drops
	// NotSent 415872, Lockout 80, ChannelLimit 48: a 99.4% "drop rate".
	s := tiny.Summary
	if s.Scheduled != 418500 || s.NotSent != 415872 || s.Sent != 418500-415872 {
		t.Errorf("tiny: scheduled %d, sent %d, not sent %d; want 418500, %d, 415872", s.Scheduled, s.Sent, s.NotSent, 418500-415872)
	}
	if s.Dropped != 80+48 {
		t.Errorf("tiny: dropped %d, want 128 (NotSent is no drop)", s.Dropped)
	}
	if s.DropRate == nil || *s.DropRate > 0.1 {
		t.Errorf("tiny: drop rate %v, want 128 of %d sent", s.DropRate, s.Sent)
	}
	if s.LossRate == nil || *s.LossRate < 0.99 {
		t.Errorf("tiny: loss rate %v, want over 99%%", s.LossRate)
	}
	for _, k := range tiny.Kinds {
		if _, ok := k.Drops[NotSentReason]; ok {
			t.Errorf("kind %s still has a NotSent drop", k.Kind)
		}
	}
	var notSent int64
	for _, iv := range tiny.Series {
		if _, ok := iv.Drops[NotSentReason]; ok {
			t.Fatalf("interval at %v still has a NotSent drop", iv.Start)
		}
		notSent += iv.NotSent
	}
	if notSent == 0 {
		t.Error("the series lost its NotSent counts")
	}
	out, err := Marshal(r)
	if err != nil {
		t.Fatalf("write the upgraded results: %v", err)
	}
	again, err := Unmarshal(out)
	if err != nil {
		t.Fatalf("read the upgraded results back: %v", err)
	}
	if again.Variant("base").Population("tiny").Summary.NotSent != 415872 {
		t.Error("round trip lost not_sent")
	}
	var b strings.Builder
	if err := WriteHTML(&b, r); err != nil {
		t.Fatalf("render the version 5 file: %v", err)
	}
}

// A current file must agree with itself: scheduled is sent + not_sent.
func TestRejectsScheduledThatDisagrees(t *testing.T) {
	r := synthCopy(t, 1)
	data, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(data, []byte(`"scheduled": `), []byte(`"scheduled": 1`), 1)
	if _, err := Unmarshal(bad); err == nil || !strings.Contains(err.Error(), "scheduled") {
		t.Fatalf("a scheduled that is not sent + not_sent: %v", err)
	}
}

// Every measured threshold value carries its unit: counts and rates had
// none ("measured 921.667" for bytes per second).
func TestThresholdValuesHaveUnits(t *testing.T) {
	for expr, want := range map[string]string{
		"bytes.admitted_bytes_per_s <= 50000": "921.667 B/s",
		"flood.admitted_per_s <= 50":          "921.667 msg/s",
		"laggy.false_disconnects == 0":        "921.667 clients",
		"all.drops.TableFull == 0":            "921.667 messages",
		"flood.session.drops.Lockout > 0":     "921.667 sessions",
		"honest.move.sent > 0":                "921.667 messages",
	} {
		if got := FormatThresholdValue(Threshold{Expr: expr, Value: 921.667}, nil); got != want {
			t.Errorf("%s: %q, want %q", expr, got, want)
		}
	}
	if got := FormatThresholdValue(Threshold{Expr: "x.p99 < 1ms", Value: 2500, Unit: UnitNs}, nil); got != "2.5 µs" {
		t.Errorf("a duration: %q", got)
	}
}
