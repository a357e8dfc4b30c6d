package cli

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicedev/sluice/reports"
)

// printSummary writes, per variant, a table of the populations (honest
// measures first), the thresholds with pass or fail, and then the variants
// side by side. A variant is expected to fail its thresholds when its
// results say so (reports.Variant.Expect).
func printSummary(w io.Writer, r *reports.Results) {
	status := "complete"
	if !r.Run.Complete {
		status = "INCOMPLETE"
	}
	fmt.Fprintf(w, "scenario %s  driver %s  seed %d  %v (warmup %v)  %s\n",
		r.Run.Scenario, r.Run.Driver, r.Run.Seed, r.Run.Duration, r.Run.Warmup, status)
	if r.Run.Target != "" {
		fmt.Fprintf(w, "target %s, a server sluice did not start: %s\n", r.Run.Target, reports.TargetNote)
	}
	fmt.Fprintln(w, countsLegend)
	for _, v := range r.Variants {
		note := ""
		switch {
		case v.ExpectsFail():
			note = "  (" + v.ExpectNote() + ": expected to fail)"
		case v.Description != "":
			note = "  (" + v.Description + ")"
		}
		fmt.Fprintf(w, "\n== policy %s%s\n", v.Name, note)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "population\trole\tclients\tscheduled\tsent\tnot sent\taccepted\tdrop rate\tloss\tp50\tp99\tadmitted/s\tdisconnects\tlockouts\ttop drop reasons\t")
		var noRate []*reports.Population // populations with no drop rate (Population.NoDropRate)
		for _, p := range sortedPops(v.Populations) {
			s := p.Summary
			rate, loss := "-", "-" // none: raw writes, or nothing sent (as the thresholds say: not measured)
			switch {
			case s.DropRate == nil:
				noRate = append(noRate, p)
			case s.Sent > 0:
				rate = pct(*s.DropRate)
			}
			if s.LossRate != nil && s.Scheduled > 0 {
				loss = pct(*s.LossRate)
			}
			disc, lock := s.FalseDisconnects, s.FalseLockouts
			discText, lockText := fmt.Sprint(disc), fmt.Sprint(lock)
			if p.Role == reports.Hostile {
				discText, lockText = "-", "-"
				if c := s.CutOff; c != nil {
					discText = fmt.Sprintf("%d/%d cut", c.Clients, c.Of)
				}
			}
			p50, p99 := "-", "-"
			if hasResponses(p) {
				p50, p99 = latency(s.ResponseP50), latency(s.ResponseP99)
			}
			role := string(p.Role)
			if p.Transport != "" { // populations on transports of their own
				role += " over " + p.Transport
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t\n",
				p.Name, role, p.Clients, s.Scheduled, s.Sent, s.NotSent, s.Accepted, rate, loss,
				p50, p99, admittedGame(r, v, p), discText, lockText, topReasons(p, 3))
		}
		tw.Flush()
		printServers(w, &r.Run, v)
		if len(noRate) > 0 {
			fmt.Fprintf(w, "  no drop rate: %s\n", reports.NoRateNote(noRate, nil))
		}
		for _, t := range v.Thresholds {
			mark := "PASS"
			if !t.Pass {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "  %s  %s  (measured %s)\n", mark, t.Expr, thresholdValue(t))
		}
		for _, na := range v.NotApplicable {
			fmt.Fprintf(w, "  N/A   %s\n", na)
		}
		if len(v.Invalid) > 0 {
			fmt.Fprintf(w, "  INVALID: %s\n", strings.Join(v.Invalid, "; "))
		}
		if n := v.ServerViewNote(); n != "" {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	if len(r.Variants) > 1 {
		printComparison(w, r)
	}
	if lines, err := reports.Verdict(r); err == nil && len(lines) > 0 {
		fmt.Fprintln(w, "\n== verdict")
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}

// countsLegend says once what the table's counts are, so that a message
// never written is not read as a send or a drop.
const countsLegend = "counts: scheduled = sent + not sent (never written: the client's connection was down); drop rate = dropped / sent; loss = (dropped + not sent) / scheduled, which thresholds call drop_rate; admitted/s = accepted game messages per second (hellos and pings are not; thresholds' admitted_per_s counts them)"

// sortedPops lists honest populations before hostile ones, keeping order.
func sortedPops(ps []*reports.Population) []*reports.Population {
	out := append([]*reports.Population(nil), ps...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Role == reports.Honest && out[j].Role != reports.Honest })
	return out
}

// printComparison prints the report's comparison (reports.Compare), its
// headline rows (the totals, honest loss and p99 per honest population,
// admitted traffic per hostile one) with the notes that say why a delta is
// not what its direction suggests, and how many thresholds each variant
// passed; the other rows are in report.html.
func printComparison(w io.Writer, r *reports.Results) {
	fmt.Fprintf(w, "\n== comparison (delta against %s)\n", r.Variants[0].Name)
	rows, err := reports.Compare(r)
	if err != nil {
		fmt.Fprintf(w, "  (no comparison: %v)\n", err)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "measure\t")
	for _, v := range r.Variants {
		if v.Incomplete() {
			fmt.Fprintf(tw, "%s (INCOMPLETE)\t", v.Name)
		} else {
			fmt.Fprintf(tw, "%s\t", v.Name)
		}
	}
	fmt.Fprintln(tw)
	var notes []string
	for _, row := range rows {
		if !row.Headline {
			continue
		}
		fmt.Fprintf(tw, "%s %s\t", row.Group, row.Measure)
		for i, c := range row.Cells {
			mark := ""
			if c.Note != "" {
				notes = append(notes, fmt.Sprintf("%s %s, %s: %s", row.Group, row.Measure, r.Variants[i].Name, c.Note))
				mark = fmt.Sprintf(" [%d]", len(notes))
			}
			if c.Delta != "" {
				fmt.Fprintf(tw, "%s (%s)%s\t", c.Value, c.Delta, mark)
			} else {
				fmt.Fprintf(tw, "%s%s\t", c.Value, mark)
			}
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "thresholds passed\t")
	for _, v := range r.Variants {
		n := 0
		for _, t := range v.Thresholds {
			if t.Pass {
				n++
			}
		}
		fmt.Fprintf(tw, "%d of %d\t", n, len(v.Thresholds))
	}
	fmt.Fprintln(tw)
	tw.Flush()
	for i, n := range notes {
		fmt.Fprintf(w, "  [%d] %s\n", i+1, n)
	}
	for _, v := range r.Variants {
		if v.Incomplete() {
			fmt.Fprintf(w, "  INCOMPLETE: %s\n", r.IncompleteNote(v))
		}
	}
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return reports.FormatPercent(f)
}

// latency formats a latency in ns to 10 µs from 1 ms up, and below that to
// three significant digits, as the report writes it: a fixed 10 µs would
// print 174.6 µs as 170µs beside the report's 175 µs.
func latency(ns int64) string {
	if ns < 0 {
		return "-"
	}
	d, unit := time.Duration(ns), 10*time.Microsecond
	for unit > 1 && d < 100*unit {
		unit /= 10
	}
	return d.Round(unit).String()
}

// hasResponses reports whether any kind of p measured a response time.
// admittedGame is p's accepted game messages per second of v's measured
// window, as the report's admitted: hellos and pings are not game messages
// (see reports.KindStats.IsGame), so a client that reconnects more does
// not look as if it got more through. 0 when nothing was measured.
func admittedGame(r *reports.Results, v *reports.Variant, p *reports.Population) float64 {
	sec := r.MeasuredOf(v).Seconds()
	if sec <= 0 {
		return 0
	}
	n, _ := p.GameAccepted()
	return float64(n) / sec
}

func hasResponses(p *reports.Population) bool {
	for _, k := range p.Kinds {
		if k.ResponseTime != nil && k.ResponseTime.Count > 0 {
			return true
		}
	}
	return false
}

func thresholdValue(t reports.Threshold) string {
	return reports.FormatThresholdValue(t, func(ns float64) string { return time.Duration(ns).String() })
}

// topReasons names the population's commonest drop reasons with counts.
func topReasons(p *reports.Population, n int) string {
	totals := map[string]int64{}
	for k := range p.MessageKinds() {
		for r, c := range k.Drops {
			totals[r] += c
		}
	}
	type rc struct {
		r string
		c int64
	}
	var list []rc
	for r, c := range totals {
		list = append(list, rc{r, c})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].c > list[j].c || list[i].c == list[j].c && list[i].r < list[j].r })
	var parts []string
	for i, x := range list {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", x.r, x.c))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
