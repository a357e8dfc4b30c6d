package reports

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// liveSpecs decodes every chart's live data on a page, by chart title.
func liveSpecs(t *testing.T, html string) map[string]liveSpec {
	t.Helper()
	out := map[string]liveSpec{}
	for _, m := range liveFigure.FindAllStringSubmatch(html, -1) {
		var s liveSpec
		if err := json.Unmarshal([]byte(m[2]), &s); err != nil {
			t.Fatalf("chart %q: live data: %v", m[1], err)
		}
		if _, dup := out[m[1]]; !dup {
			out[m[1]] = s
		}
	}
	return out
}

var liveFigure = regexp.MustCompile(`(?s)<figure class="chart-figure">\s*<h3>([^<]*)</h3>.*?<script type="application/json" class="live-data">(.*?)</script>`)

// The charts of flood-mix (its version 5 results file, real data) carry
// something: its hostile populations got no replies or replies in the same
// virtual instant, so they get a note instead of a spectrum; messages not
// sent have their own chart and the hostile drops chart shows the
// server's reasons without them; the over-time charts mark lockouts and
// cut-offs; intervals without replies are gaps.
func TestChartsCarrySomething(t *testing.T) {
	data, err := os.ReadFile("testdata/results-v5.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	// An interval of the honest players without a reply.
	honest := r.Variants[0].Population("honest")
	gap := &honest.Series[5]
	gap.Responses, gap.P50, gap.P99, gap.HDR = 0, 0, 0, ""
	html := renderHTML(t, r)
	if !strings.Contains(html, "No response-time chart for slow got no replies (inputs and raw bytes are not answered); tiny, bytes, badlen, garbage had only zero latencies") {
		t.Error("no note on the populations without a spectrum")
	}
	specs := liveSpecs(t, html)
	spectrum, ok := specs["Response time percentile spectrum per population"]
	if !ok {
		t.Fatalf("no live spectrum in %v", slices.Collect(mapKeys(specs)))
	}
	if len(spectrum.Series) != 1 || !strings.HasPrefix(spectrum.Series[0].Label, "honest (n=") {
		t.Errorf("spectrum series %v, want honest alone", spectrum.Series)
	}
	var hostile, notSent *liveSpec
	for title, s := range specs {
		switch {
		case strings.HasPrefix(title, "Hostile drops by reason over time"):
			hostile = &s
		case strings.HasPrefix(title, "Messages not sent over time"):
			notSent = &s
		}
	}
	if hostile == nil || notSent == nil {
		t.Fatalf("charts %v lack the hostile drops or the not-sent chart", slices.Collect(mapKeys(specs)))
	}
	for _, s := range hostile.Series {
		if s.Label == NotSentReason {
			t.Error("the hostile drops chart shows NotSent")
		}
	}
	if len(hostile.Series) < 3 {
		t.Errorf("hostile drops chart has %d reasons", len(hostile.Series))
	}
	if len(notSent.Series) == 0 {
		t.Error("the not-sent chart has no population")
	}
	var labels []string
	for _, m := range hostile.Markers {
		labels = append(labels, m.Label)
	}
	for _, want := range []string{"end of warmup", "tiny: first lockout", "tiny: cut off"} {
		if !slices.Contains(labels, want) {
			t.Errorf("markers %q lack %q", labels, want)
		}
	}
	// Gaps: an interval with no reply has no value (null), not a zero.
	over := specs["Response time percentiles over time (p99 solid, p50 dashed; no line where an interval had no reply)"]
	if len(over.Data) < 2 {
		t.Fatal("no live percentiles over time")
	}
	if len(over.Data[0]) != len(honest.Series) {
		t.Fatalf("%d points in time for %d intervals", len(over.Data[0]), len(honest.Series))
	}
	for i, v := range over.Data[1] {
		switch {
		case i == 5 && v != nil:
			t.Errorf("the interval with no reply is drawn at %v, not left a gap", *v)
		case v != nil && *v <= 0:
			t.Errorf("a p99 of %v drawn on a log axis", *v)
		}
	}
}

// Populations, variants and reasons are told apart by colour: no reason
// takes a population's or a variant's colour.
func TestPalettesApart(t *testing.T) {
	for r, c := range reasonColors {
		if slices.Contains(populationColors, c) || slices.Contains(variantColors, c) || c == acceptedColor {
			t.Errorf("reason %s has colour %s, also a population's, a variant's or accepted's", r, c)
		}
	}
	for _, c := range populationColors {
		if slices.Contains(variantColors, c) {
			t.Errorf("colour %s is both a population's and a variant's", c)
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
