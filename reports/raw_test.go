package reports

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// simVariant returns a complete 10 s sim run of scenario with one variant,
// "base", to fill.
func simVariant(t *testing.T, scenario string) (*Results, *Variant) {
	t.Helper()
	r := New(Run{Scenario: scenario, Driver: DriverSim, Duration: 10 * time.Second, Complete: true}, Environment{})
	v, err := r.AddVariant("base", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, v
}

// rawResults is one variant with an honest population and a slowloris
// whose raw row holds 129 writes (5 of them never sent) and the 11 frames
// the server read from them and dropped (as flood-mix's "slow" measured
// when its dribble still carried a cut frame's tail to a new connection).
func rawResults(t *testing.T) (*Results, *Population, *Population) {
	t.Helper()
	r, v := simVariant(t, "raw")
	h := v.AddPopulation("players", "honest", Honest, 10)
	chat := h.Kind("chat")
	chat.Sent, chat.Accepted = 200, 190
	chat.Drop("ChannelLimit", 10)
	s := v.AddPopulation("slow", "slowloris", Hostile, 4)
	raw := s.Kind(RawKind)
	raw.Sent, raw.SentBytes = 129, 124
	raw.Drop("NotSent", 5)
	raw.Drop("Oversize", 6)
	raw.Drop("Malformed", 5)
	ends := s.Kind(SessionKind)
	ends.Sent = 13
	ends.Drop("Disconnected", 7)
	ends.Drop("Oversize", 6)
	if err := r.Finalize(); err != nil {
		t.Fatal(err)
	}
	return r, h, s
}

// A population with a raw row counts its sends in writes and the server's
// drops in frames: Finalize gives it no drop rate and says why, and the
// results file says so as null, while a population of messages keeps its
// rate.
func TestRawPopulationHasNoDropRate(t *testing.T) {
	r, h, s := rawResults(t)
	if got := h.Summary; got.DropRate == nil || *got.DropRate != 0.05 || got.NoDropRate != "" {
		t.Errorf("honest summary: drop rate %v, no rate %q; want 0.05", got.DropRate, got.NoDropRate)
	}
	if got := s.Summary; got.DropRate != nil || got.NoDropRate != NoRateRaw {
		t.Errorf("slowloris summary: drop rate %v, no rate %q; want nil and %q", got.DropRate, got.NoDropRate, NoRateRaw)
	}
	if got := s.Summary; got.Scheduled != 134 || got.Sent != 129 || got.NotSent != 5 || got.Dropped != 11 {
		t.Errorf("slowloris totals: scheduled %d sent %d not sent %d dropped %d, want 134, 129, 5 and 11 (the session row left out, NotSent not a drop)", got.Scheduled, got.Sent, got.NotSent, got.Dropped)
	}
	if got := s.Summary; got.LossRate != nil {
		t.Errorf("slowloris has a loss rate %v over writes", *got.LossRate)
	}
	if _, ok := s.Kind(RawKind).DropRate(); ok {
		t.Error("the raw row has a drop rate")
	}
	if rate, ok := h.Kind("chat").DropRate(); !ok || rate != 0.05 {
		t.Errorf("chat drop rate %v, %v", rate, ok)
	}

	path := filepath.Join(t.TempDir(), ResultsFile)
	if err := WriteFile(path, r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Variants []struct {
			Populations []struct {
				Name    string
				Summary map[string]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range file.Variants[0].Populations {
		got[p.Name] = string(p.Summary["drop_rate"]) + " " + string(p.Summary["no_drop_rate"])
	}
	want := map[string]string{"players": "0.05 ", "slow": `null "` + NoRateRaw + `"`}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s in the file: drop_rate, no_drop_rate = %s, want %s", name, got[name], w)
		}
	}
	back, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bs := back.Variants[0].Population("slow").Summary; bs.DropRate != nil || bs.NoDropRate != NoRateRaw {
		t.Errorf("read back: %v, %q", bs.DropRate, bs.NoDropRate)
	}
}

// A file that gives a raw population a drop rate, both a rate and the
// reason for none, or a reason that is not the population's, is refused.
func TestValidateRefusesARawDropRate(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(h, s *Summary)
		want   string
	}{
		{"rate for raw", func(h, s *Summary) { x := 16.0 / 129; s.DropRate, s.NoDropRate = &x, "" }, "there can be none"},
		{"rate and reason", func(h, s *Summary) { h.NoDropRate = "because" }, "no_drop_rate says there is none"},
		{"reason where there is a rate", func(h, s *Summary) { h.DropRate, h.NoDropRate = nil, "because" }, "but the population has one"},
		{"another reason", func(h, s *Summary) { s.NoDropRate = "because" }, "but the reason there is none is"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, h, s := rawResults(t)
			c.mutate(&h.Summary, &s.Summary)
			err := r.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate: %v, want ErrInvalid with %q", err, c.want)
			}
		})
	}
}

// The page shows no drop rate for the raw row nor for its population, and
// says why under the table; the chart of shares of sent messages leaves
// the population out and says so.
func TestHTMLShowsNoRawDropRate(t *testing.T) {
	r, _, _ := rawResults(t)
	html := renderHTML(t, r)
	for _, want := range []string{
		// players: 200 sent, 10 dropped, 5%.
		`<td class="num">200</td><td class="num">190</td><td class="num">10</td><td class="num">5%</td>`,
		// slow: 129 sent, 11 dropped, no rate (it was 12.4% of 16).
		// (scheduled 134, sent 129, not sent 5, accepted 0, dropped 11)
		`<td class="num">134</td><td class="num">129</td><td class="num">5</td><td class="num">0</td><td class="num">11</td><td class="num">–</td><td class="num">–</td>`,
		`<td>raw</td><td class="num">134</td><td class="num">5</td><td class="num">129</td><td class="num">0</td><td class="num">11</td><td class="num">–</td><td class="num">–</td>`,
		"Drop rate –: slow (" + htmlEscape(NoRateRaw) + "; see the raw row below).",
		"Not shown: slow (" + htmlEscape(NoRateRaw) + ").",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(html, "12.4%") {
		t.Error("page shows 16 drops of 129 writes as a rate")
	}
}

// An honest population that writes raw bytes leaves the honest total with
// no drop rate: the headline says why, and the comparison has no such row.
func TestHonestRawLeavesNoHonestDropRate(t *testing.T) {
	r, _, s := rawResults(t)
	s.Role = Honest
	s.Summary.CutOff = nil
	html := renderHTML(t, r)
	if want := "– (" + htmlEscape(NoRateRaw) + ")"; !strings.Contains(html, want) {
		t.Errorf("headline lacks %q", want)
	}
	rows, err := Compare(r)
	if err != nil {
		t.Fatal(err)
	}
	var measures []string
	for _, row := range rows {
		measures = append(measures, row.Group+": "+row.Measure)
	}
	for _, m := range []string{"all honest: loss", "slow (honest): loss", "slow (honest): drop rate (of sent)"} {
		if slices.Contains(measures, m) {
			t.Errorf("comparison has %s", m)
		}
	}
	for _, m := range []string{"all honest: false disconnects", "players (honest): loss", "players (honest): drop rate (of sent)"} {
		if !slices.Contains(measures, m) {
			t.Errorf("comparison lacks %s: %q", m, measures)
		}
	}
}

// htmlEscape escapes s as html/template does in text.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;").Replace(s)
}

// A raw row with no writes holds only the server's decisions on frames
// the population sent as other kinds (an oversize move): those are frames
// like the rest, and the population keeps its drop rate.
func TestRawRowWithoutWritesKeepsTheRate(t *testing.T) {
	r, v := simVariant(t, "raw")
	p := v.AddPopulation("bytes", "byte-flood", Hostile, 1)
	move := p.Kind("move")
	move.Sent, move.Accepted = 40, 30
	move.Drop("ByteLimit", 6)
	p.Kind(RawKind).Drop("Oversize", 4)
	if err := r.Finalize(); err != nil {
		t.Fatal(err)
	}
	if s := p.Summary; s.DropRate == nil || *s.DropRate != 0.25 || s.NoDropRate != "" {
		t.Errorf("drop rate %v (%q), want 10 of 40", s.DropRate, s.NoDropRate)
	}
	if _, err := Marshal(r); err != nil {
		t.Fatal(err)
	}
}
