package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// roundTrip encodes r, decodes it again and fails unless the decoded
// results equal r; it returns the encoding and the decoded results.
func roundTrip(t *testing.T, r *Results) ([]byte, *Results) {
	t.Helper()
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, got) {
		t.Fatalf("results differ after a JSON round trip:\n%.2000s", b)
	}
	return b, got
}

func TestRoundTripJSON(t *testing.T) {
	b, got := roundTrip(t, synthResults(t, 1))
	b2, err := Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatal("re-encoding a decoded result changed its bytes")
	}
	// The histograms decode to what was recorded.
	k := got.Variants[0].Populations[0].Kinds[0]
	h, err := k.ResponseTime.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if h.TotalCount() != k.ResponseTime.Count || Percentiles(h) != k.ResponseTime.Quantiles {
		t.Fatalf("decoded histogram: count %d, %+v; stored %d, %+v", h.TotalCount(), Percentiles(h), k.ResponseTime.Count, k.ResponseTime.Quantiles)
	}
}

func TestRoundTripFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	r := synthCopy(t, 1)
	if err := WriteFile(path, r); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, got) {
		t.Fatal("results differ after a file round trip")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Read(f); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want only results.json", len(ents))
	}
}

func TestThresholdNonFiniteValues(t *testing.T) {
	r := synthCopy(t, 1)
	v := r.Variants[0]
	v.Thresholds = nil
	v.AddThreshold("players.nothing.p99 < 1ms", math.NaN(), "ns", false)
	v.AddThreshold("chat-flood.cutoff_max < 5s", math.Inf(1), "ns", false)
	v.AddThreshold("x > -1", math.Inf(-1), "", false)
	v.AddThreshold("players.drop_rate < 1%", 0.004, "", true)
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"value": "NaN"`, `"value": "+Inf"`, `"value": "-Inf"`, `"value": 0.004`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("file lacks %s", want)
		}
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	th := got.Variants[0].Thresholds
	if !math.IsNaN(th[0].Value) || !math.IsInf(th[1].Value, 1) || !math.IsInf(th[2].Value, -1) || th[3].Value != 0.004 || th[3].Expr != "players.drop_rate < 1%" || !th[3].Pass {
		t.Fatalf("thresholds after a round trip: %+v", th)
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "not measured") || !strings.Contains(page.String(), "never") || !strings.Contains(page.String(), "−∞") {
		t.Error("page does not show the non-finite values")
	}
	// Anything else in place of a number is rejected, and so are unknown
	// fields inside a threshold.
	for _, bad := range []string{`"value": "lots"`, `"value": true`} {
		c := bytes.Replace(b, []byte(`"value": 0.004`), []byte(bad), 1)
		if _, err := Unmarshal(c); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "value") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	c := bytes.Replace(b, []byte(`"value": 0.004`), []byte(`"value": 0.004, "limit": 1`), 1)
	if _, err := Unmarshal(c); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "limit") {
		t.Errorf("unknown threshold field: %v", err)
	}
}

// TestMinimalRoundTrip covers a result with the optional parts absent.
func TestMinimalRoundTrip(t *testing.T) {
	r := New(Run{Scenario: "s", Driver: DriverSim}, Environment{})
	v, err := r.AddVariant("only", nil)
	if err != nil {
		t.Fatal(err)
	}
	v.AddPopulation("p", "honest", Honest, 1).Kind("move").Sent = 3
	if err := r.Finalize(); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, r)
}

func marshalMap(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func asMap(t *testing.T, r *Results) map[string]any {
	t.Helper()
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRejectTruncated(t *testing.T) {
	b, err := Marshal(synthCopy(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 2, 40, len(b) / 3, len(b) / 2, len(b) - 3, len(b) - 2} {
		_, err := Unmarshal(b[:n])
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("cut at %d of %d bytes: got %v, want ErrTruncated", n, len(b), err)
			continue
		}
		if !strings.Contains(err.Error(), "truncated") {
			t.Errorf("cut at %d: message %q does not say truncated", n, err)
		}
	}
	// The same through a file names the file.
	path := filepath.Join(t.TempDir(), "cut.json")
	if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(path)
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), path) {
		t.Fatalf("ReadFile of a truncated file: %v", err)
	}
}

func TestRejectVersions(t *testing.T) {
	m := asMap(t, synthCopy(t, 1))
	cases := []struct {
		name    string
		version any
		want    string
	}{
		{"newer", SchemaVersion + 1, "newer"},
		{"much newer", 99, "newer"},
		{"older", MinSchemaVersion - 1, "older"},
		{"not a number", "one", "not an integer"},
		{"missing", nil, "no schema_version"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mm := map[string]any{}
			for k, v := range m {
				mm[k] = v
			}
			if c.version == nil {
				delete(mm, "schema_version")
			} else {
				mm["schema_version"] = c.version
			}
			// A newer version may well have fields this one lacks: the
			// version must be what is reported, not the unknown field.
			mm["a_field_from_the_future"] = true
			_, err := Unmarshal(marshalMap(t, mm))
			if !errors.Is(err, ErrVersion) {
				t.Fatalf("got %v, want ErrVersion", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("message %q does not say %q", err, c.want)
			}
		})
	}
}

func TestRejectMalformed(t *testing.T) {
	good, err := Marshal(synthCopy(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	m := asMap(t, synthCopy(t, 1))
	unknown := map[string]any{}
	for k, v := range m {
		unknown[k] = v
	}
	unknown["run"].(map[string]any)["colour"] = "blue"
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"unknown field", marshalMap(t, unknown), `unknown field "colour"`},
		{"trailing data", append(append([]byte{}, good...), []byte(`{"x":1}`)...), "after the results object"},
		{"syntax error", []byte(`{"schema_version": 1,, }`), "syntax error"},
		{"not an object", []byte(`[1, 2]`), "not a results object"},
		{"wrong type", fmt.Appendf(nil, `{"schema_version": %d, "run": {"seed": "x"}}`, SchemaVersion), "run.seed"},
	}
	// Where and what, in the file's terms rather than Go's.
	cases = append(cases, []struct {
		name string
		data []byte
		want string
	}{
		{"wrong type, placed", fmt.Appendf(nil, "{\"schema_version\": %d,\n \"run\": {\"seed\": \"x\"}}", SchemaVersion), `line 2, column 18: run.seed: a JSON string where a whole number (0 or more) belongs`},
		// No position where the decoder gives none: a guess can be wrong.
		{"not a time", fmt.Appendf(nil, "{\"schema_version\": %d,\n\"run\": {\"started\": \"yesterday\"}}", SchemaVersion), `reports: "yesterday" is not a time (RFC 3339`},
		{"unknown field", fmt.Appendf(nil, "{\"schema_version\": %d,\n\"run\": {\"colour\": 1}}", SchemaVersion), `reports: unknown field "colour"`},
		{"an object for a number", fmt.Appendf(nil, "{\"schema_version\": %d,\n \"run\": {\"seed\": {}}}", SchemaVersion), `line 2, column 18: run.seed: a JSON object where a whole number (0 or more) belongs`},
		// A threshold is decoded on its own: its errors name the field in
		// it, with no position in the file.
		{"inside a threshold", fmt.Appendf(nil, "{\"schema_version\": %d,\n\"variants\": [{\"thresholds\": [{\"expr\": \"x\", \"pass\": \"yes\"}]}]}", SchemaVersion), `reports: a threshold's pass: a JSON string where true or false belongs`},
		{"syntax error, placed", []byte("{\"schema_version\": 1,\n, }"), "line 2, column 1: JSON syntax error"},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Unmarshal(c.data)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("message %q does not contain %q", err, c.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(r *Results)
		want   string
	}{
		{"no scenario", func(r *Results) { r.Run.Scenario = "" }, "run.scenario"},
		{"bad driver", func(r *Results) { r.Run.Driver = "udp" }, "run.driver"},
		{"bad sha", func(r *Results) { r.Run.ScenarioSHA256 = "abc" }, "scenario_sha256"},
		{"warmup too long", func(r *Results) { r.Run.Warmup = 2 * r.Run.Duration }, "warmup"},
		{"finished before started", func(r *Results) { r.Run.Finished = r.Run.Started.Add(-time.Second) }, "run.finished"},
		{"duplicate variant", func(r *Results) { r.Variants[1].Name = r.Variants[0].Name }, "appears twice"},
		{"empty variant name", func(r *Results) { r.Variants[0].Name = "" }, "name is empty"},
		{"policy not object", func(r *Results) { r.Variants[0].Policy = json.RawMessage(`[1]`) }, "policy"},
		{"duplicate population", func(r *Results) {
			r.Variants[0].Populations[1].Name = r.Variants[0].Populations[0].Name
		}, "population name"},
		{"bad role", func(r *Results) { r.Variants[0].Populations[0].Role = "neutral" }, "role"},
		{"duplicate kind", func(r *Results) {
			ks := r.Variants[0].Populations[0].Kinds
			ks[1].Kind = ks[0].Kind
		}, "appears twice"},
		{"negative sent", func(r *Results) { r.Variants[0].Populations[0].Kinds[0].Sent = -1 }, "negative"},
		{"session row without reasons", func(r *Results) {
			r.Variants[0].Populations[0].Kind(SessionKind).Sent = 3
		}, "session row"},
		{"bad reason", func(r *Results) { r.Variants[0].Populations[0].Kinds[0].Drops["no such reason!"] = 1 }, "not a reason name"},
		{"histogram count", func(r *Results) { r.Variants[0].Populations[0].Kinds[0].ResponseTime.Count++ }, "response_time"},
		{"histogram garbage", func(r *Results) { r.Variants[0].Populations[0].Kinds[0].SendLag.HDR = "!!!" }, "send_lag"},
		{"series order", func(r *Results) {
			s := r.Variants[0].Populations[0].Series
			s[0], s[1] = s[1], s[0]
		}, "series[1]"},
		{"drop rate", func(r *Results) { two := 2.0; r.Variants[0].Populations[0].Summary.DropRate = &two }, "drop_rate"},
		{"cut off", func(r *Results) { r.Variants[0].Populations[2].Summary.CutOff.Of = -1 }, "cut_off"},
		{"threshold", func(r *Results) { r.Variants[0].Thresholds[0].Expr = "" }, "expr"},
		{"rate Inf", func(r *Results) { r.Variants[0].Populations[0].Summary.AdmittedPerSec = math.Inf(1) }, "not finite"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := synthCopy(t, 1)
			c.mutate(r)
			err := r.Validate()
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("message %q does not name %q", err, c.want)
			}
			if _, err := Marshal(r); err == nil {
				t.Fatal("Marshal accepted an invalid result")
			}
		})
	}
	r := synthCopy(t, 1)
	r.SchemaVersion = 7
	if err := r.Validate(); !errors.Is(err, ErrVersion) {
		t.Fatalf("schema version 7: %v", err)
	}
}

// A results file whose interval histograms are damaged is refused when it
// is read, naming the interval. (Validate leaves them alone: results built
// in memory get them from AddInterval.) The file is encoded without
// validating, as a damaged copy would be.
func TestReadChecksIntervalHistograms(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(r *Results)
		want   string
	}{
		{"series hdr garbage", func(r *Results) { firstHDR(t, r).HDR = "!!!" }, "series[0].hdr"},
		{"series hdr count", func(r *Results) { firstHDR(t, r).Responses++ }, "the hdr encoding holds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := synthCopy(t, 1)
			c.mutate(r)
			b, err := encode(r)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "results.json")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = ReadFile(path)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("message %q does not name %q", err, c.want)
			}
		})
	}
}

// firstHDR returns the first interval of r's first population that keeps
// its histogram.
func firstHDR(t *testing.T, r *Results) *Interval {
	t.Helper()
	s := r.Variants[0].Populations[0].Series
	for i := range s {
		if s[i].HDR != "" {
			return &s[i]
		}
	}
	t.Fatal("no interval keeps its histogram")
	return nil
}

func TestAtomicWriteKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("interrupted")
	err := writeFileAtomic(path, func(w io.Writer) error {
		if _, err := w.Write(bytes.Repeat([]byte("x"), 1<<20)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "old" {
		t.Fatalf("old file changed: %q, %v", b[:min(len(b), 10)], err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary file left behind: %v", ents)
	}
	// An invalid result is never written at all.
	r := synthCopy(t, 1)
	r.Run.Driver = ""
	if err := WriteFile(path, r); !errors.Is(err, ErrInvalid) {
		t.Fatalf("WriteFile of invalid results: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatal("invalid results overwrote the file")
	}
}

// A failed write into the temporary file (a full disk) is reported naming
// the file asked for, not the temporary one: here fill fails as writeHTML
// does when its write fails, with the file's *fs.PathError wrapped.
func TestAtomicWriteErrorNamesThePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	full := errors.New("no space left on device")
	var tmp string
	err := writeFileAtomic(path, func(w io.Writer) error {
		m, err := filepath.Glob(filepath.Join(dir, ".report.html.tmp-*"))
		if err != nil || len(m) != 1 {
			t.Fatalf("temporary file: %v, %v", m, err)
		}
		tmp = m[0]
		return fmt.Errorf("reports: write html: %w", &fs.PathError{Op: "write", Path: tmp, Err: full})
	})
	if !errors.Is(err, full) {
		t.Fatalf("got %v, want the write's error", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "cannot write "+path+": ") || strings.Contains(msg, tmp) || strings.Contains(msg, ".tmp-") {
		t.Fatalf("message %q: want it to name %s and not the temporary file", msg, path)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

func TestAddHistogramMerges(t *testing.T) {
	var k KindStats
	a := hdrhistogram.New(1, 1e9, 3)
	b := hdrhistogram.New(1, 1e12, 3)
	for i := int64(1); i <= 1000; i++ {
		_ = a.RecordValue(i * 1000)
		_ = b.RecordValue(i * 2000)
	}
	_ = b.RecordValue(5e11) // beyond a's range: dropped by the merge
	if err := k.AddHistogram(ResponseTime, a); err != nil {
		t.Fatal(err)
	}
	if err := k.AddHistogram(ResponseTime, b); err != nil {
		t.Fatal(err)
	}
	h := k.ResponseTime
	if h.Count != 2000 || h.MergeDropped != 1 {
		t.Fatalf("count %d, merge dropped %d; want 2000 and 1", h.Count, h.MergeDropped)
	}
	if a.TotalCount() != 1000 {
		t.Fatal("AddHistogram changed its argument")
	}
	if err := k.AddHistogram(Metric(9), a); err == nil {
		t.Fatal("unknown metric accepted")
	}
	if k.Histogram(ServiceTime) != nil || k.Histogram(ResponseTime) != h {
		t.Fatal("Histogram returned the wrong slot")
	}
}

func TestAddVariantPolicy(t *testing.T) {
	r := New(Run{Scenario: "s", Driver: DriverSim}, Environment{})
	if _, err := r.AddVariant("a", json.RawMessage(`{ "rate" : 5 }`)); err != nil {
		t.Fatal(err)
	}
	if got := string(r.Variant("a").Policy); got != `{"rate":5}` {
		t.Fatalf("policy %s", got)
	}
	if _, err := r.AddVariant("a", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("duplicate variant: %v", err)
	}
	if _, err := r.AddVariant("b", []int{1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("non-object policy: %v", err)
	}
	if _, err := r.AddVariant("c", struct{ Rate int }{3}); err != nil {
		t.Fatal(err)
	}
}

func TestAddIntervalOrder(t *testing.T) {
	var p Population
	if err := p.AddInterval(time.Second, time.Second, 1, 1, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.AddInterval(1500*time.Millisecond, time.Second, 1, 1, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("overlapping interval: %v", err)
	}
	if err := p.AddInterval(3*time.Second, 0, 1, 1, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("zero-length interval: %v", err)
	}
}

func TestCutOffTimes(t *testing.T) {
	c := CutOffTimes([]time.Duration{5, 1, 3, 9}, 6)
	// All six: 1, 3, 5, 9 and two never; the lower median is the third.
	if *c != (CutOff{Clients: 4, Of: 6, P50: 3, Max: 9, AllP50: 5}) || c.MaxAll() != Never {
		t.Fatalf("%+v", *c)
	}
	if c := CutOffTimes([]time.Duration{2}, 4); c.AllP50 != Never || c.P50 != 2 {
		t.Fatalf("one of four cut off: %+v", *c)
	}
	if c := CutOffTimes([]time.Duration{4, 2}, 2); c.AllP50 != 2 || c.MaxAll() != 4 {
		t.Fatalf("all cut off: %+v", *c)
	}
	if c := CutOffTimes(nil, 3); *c != (CutOff{Of: 3, AllP50: Never}) {
		t.Fatalf("%+v", *c)
	}
}

func TestFinalize(t *testing.T) {
	r := synthCopy(t, 1)
	p := r.Variants[0].Populations[0]
	var sent, acc, drop int64
	for _, k := range p.Kinds {
		sent += k.Sent
		acc += k.Accepted
		drop += k.Dropped()
	}
	s := p.Summary
	if s.Sent != sent || s.Accepted != acc || s.Dropped != drop {
		t.Fatalf("summary %+v", s)
	}
	if want := float64(drop) / float64(sent); s.DropRate == nil || *s.DropRate != want || s.NoDropRate != "" {
		t.Fatalf("drop rate %v (%q), want %v", s.DropRate, s.NoDropRate, want)
	}
	if want := float64(acc) / r.Run.Measured().Seconds(); s.AdmittedPerSec != want {
		t.Fatalf("admitted/s %v, want %v", s.AdmittedPerSec, want)
	}
	if s.ResponseP99 < s.ResponseP50 || s.ResponseP50 <= 0 {
		t.Fatalf("percentiles %d, %d", s.ResponseP50, s.ResponseP99)
	}
	if s.FalseDisconnects == 0 && r.Variants[1].Populations[0].Summary.FalseDisconnects == 0 {
		t.Fatal("Finalize cleared harness-set fields")
	}
}

func TestCaptureEnvironment(t *testing.T) {
	e := CaptureEnvironment("v1.2.3")
	if e.GoVersion == "" || e.OS == "" || e.Arch == "" || e.GOMAXPROCS < 1 || e.SluiceVersion != "v1.2.3" {
		t.Fatalf("%+v", e)
	}
}

func FuzzUnmarshal(f *testing.F) {
	b, err := Marshal(synthCopy(f, 1))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"schema_version":2,"run":{"scenario":"s","driver":"sim"},"variants":[{"name":"v","populations":[{"name":"p","role":"honest","kinds":[{"kind":"k","sent":1,"response_time":{"count":0,"hdr":"HISTFAAAAB94nJNpmSzMwMDAxQABzFCaEUzYfwBJCiETzBMUAJrvBZQ="}}]}]}]}`))
	f.Add([]byte(`{"schema_version":3}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Unmarshal(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error %v wraps none of the sentinels", err)
			}
			return
		}
		if _, err := Marshal(r); err != nil {
			t.Fatalf("a result that decoded does not encode: %v", err)
		}
	})
}

// A variant stopped early has its rates over what it measured: from the
// end of the warm-up to where it stopped, not the planned window.
func TestStoppedVariantRatesAreOverWhatItMeasured(t *testing.T) {
	r := New(Run{Scenario: "s", Driver: "sim", Duration: 10 * time.Second, Warmup: 2 * time.Second}, Environment{})
	for _, stopped := range []time.Duration{0, 4 * time.Second} {
		v, err := r.AddVariant(fmt.Sprint("v", stopped), nil)
		if err != nil {
			t.Fatal(err)
		}
		v.Stopped = stopped
		p := v.AddPopulation("honest", "honest", Honest, 1)
		k := p.Kind("move")
		k.Sent, k.Accepted = 100, 100
	}
	if err := r.Finalize(); err != nil {
		t.Fatal(err)
	}
	if got := r.Variants[0].Population("honest").Summary.AdmittedPerSec; got != 100.0/8 {
		t.Errorf("ran to the end: %v/s, want 100 over 8s", got)
	}
	if got := r.MeasuredOf(r.Variants[1]); got != 2*time.Second {
		t.Errorf("stopped at 4s: measured %v, want 2s", got)
	}
	if got := r.Variants[1].Population("honest").Summary.AdmittedPerSec; got != 100.0/2 {
		t.Errorf("stopped at 4s: %v/s, want 100 over 2s", got)
	}
}

// A hand-edited file that no run writes, which would render a page that
// says nothing or contradicts itself, is refused by the reader, naming the
// field.
func TestRejectHollowFiles(t *testing.T) {
	cases := []struct {
		name, want string
		edit       func(r *Results)
	}{
		{"no variants", "variants is empty", func(r *Results) { r.Variants = []*Variant{} }},
		{"no populations", `variant "baseline": populations is empty`, func(r *Results) { r.Variants[0].Populations = nil }},
		{"threshold over a missing population", `thresholds[0].expr "players.drop_rate < 0.3%" reads population "players"`, func(r *Results) {
			for _, v := range r.Variants {
				v.Populations = slices.DeleteFunc(v.Populations, func(p *Population) bool { return p.Name == "players" })
			}
		}},
		{"unknown reason", `kind "move": drops: reason "Bogus"`, func(r *Results) { r.Variants[0].Populations[0].Kinds[0].Drop("Bogus", 1) }},
		{"unknown reason in a series", `series[0].drops: reason "Bogus"`, func(r *Results) { r.Variants[0].Populations[0].Series[0].Drops["Bogus"] = 1 }},
		{"no interval", "run.interval_ns is 0", func(r *Results) { r.Run.Interval = 0 }},
		{"bad expect", `expect is "maybe"`, func(r *Results) { r.Variants[0].Expect = "maybe" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := synthCopy(t, 1)
			c.edit(r)
			b, err := encode(r)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Unmarshal(b)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(fmt.Sprint(err), c.want) {
				t.Fatalf("Unmarshal: %v, want ErrInvalid naming %q", err, c.want)
			}
		})
	}
}
