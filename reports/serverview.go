package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"sort"
	"strings"
)

// ServerView is the server's own account of a variant's run, beside the
// clients' (loopback runs against the harness's in-process server): its
// gate's counters over the measured window, and whether they agree with
// the server's per-population counters, which the populations' server
// decisions are read from, where the two count the same thing. See
// docs/metrics.md ("The server's view in runs") for what is compared.
// The zero value is an empty view; it is plain data.
type ServerView struct {
	// Window is what the gate counted over the measured window.
	Window ServerCounts `json:"window"`
	// Check compares the gate with the server's populations over the
	// whole run (both ends quiescent, so exact).
	Check ServerCheck `json:"check"`
}

// ServerCounts are a gate's counters over a span. Reason-keyed maps use
// the reason names ("None" counts accepted messages) and hold non-zero
// counts only.
type ServerCounts struct {
	// Messages counts decisions by gate row (a policy channel, or
	// "(unknown)", "(transport)", "(session)") and reason.
	Messages map[string]map[string]int64 `json:"messages,omitempty"`
	// Actions counts decisions by action (Accept, Drop, Reject,
	// Disconnect).
	Actions map[string]int64 `json:"actions,omitempty"`
	// Floods and FloodBytes are the transport-level drops and their bytes
	// by reason, from the gate's coalesced flood reports; FloodsTotal the
	// gate's own count of those drops as they happened.
	Floods      map[string]int64 `json:"floods,omitempty"`
	FloodBytes  map[string]int64 `json:"flood_bytes,omitempty"`
	FloodsTotal int64            `json:"floods_total"`
	// StageRises counts strike scores rising into each stage.
	StageRises map[string]int64 `json:"stage_rises,omitempty"`
	// Lockouts counts lockouts imposed, TableFull decisions refused by a
	// full table, Shadowed messages accepted only by shadow mode.
	Lockouts  int64 `json:"lockouts"`
	TableFull int64 `json:"table_full"`
	Shadowed  int64 `json:"shadowed,omitempty"`
}

// ServerCheck is the comparison of the gate's counts with the server's
// per-population ones. Made false says why not (Why); Agree is true when
// every compared row agrees, and a reader refuses a file whose Agree says
// otherwise than its rows.
type ServerCheck struct {
	Made  bool             `json:"made"`
	Why   string           `json:"why,omitempty"`
	Agree bool             `json:"agree"`
	Rows  []ServerCheckRow `json:"rows,omitempty"`
}

// ServerCheckRow is one count as the gate and as the server counted it:
// the gate's rows and the server's rows summed (names joined by "+"), the
// reasons summed, the gate's count, the server's over the run's
// populations and over connections before their Hello. A compared row
// agrees when GateCount = Populations + BeforeHello; a row shown only
// says why in Note.
type ServerCheckRow struct {
	Gate        string `json:"gate,omitempty"`
	Server      string `json:"server,omitempty"`
	Reason      string `json:"reason"`
	GateCount   int64  `json:"gate_count"`
	Populations int64  `json:"populations"`
	BeforeHello int64  `json:"before_hello"`
	Compared    bool   `json:"compared"`
	Note        string `json:"note,omitempty"`
}

// Agrees reports whether a compared row's counts are equal (a row shown
// only agrees).
func (r ServerCheckRow) Agrees() bool {
	return !r.Compared || r.GateCount == r.Populations+r.BeforeHello
}

// Compared returns the number of compared rows and of those that
// disagree.
func (c *ServerCheck) Compared() (rows, disagree int) {
	for _, r := range c.Rows {
		if r.Compared {
			rows++
			if !r.Agrees() {
				disagree++
			}
		}
	}
	return rows, disagree
}

// validate checks the view's counts and that Agree says what its rows
// say; errors name the field.
func (s *ServerView) validate() error {
	if s == nil {
		return nil
	}
	w := &s.Window
	for row, m := range w.Messages {
		for r, n := range m {
			if n < 0 {
				return fmt.Errorf("window.messages[%q][%q] is %d, negative", row, r, n)
			}
		}
	}
	for name, m := range map[string]map[string]int64{"actions": w.Actions, "floods": w.Floods, "flood_bytes": w.FloodBytes, "stage_rises": w.StageRises} {
		for k, n := range m {
			if n < 0 {
				return fmt.Errorf("window.%s[%q] is %d, negative", name, k, n)
			}
		}
	}
	for name, n := range map[string]int64{"floods_total": w.FloodsTotal, "lockouts": w.Lockouts, "table_full": w.TableFull, "shadowed": w.Shadowed} {
		if n < 0 {
			return fmt.Errorf("window.%s is %d, negative", name, n)
		}
	}
	c := &s.Check
	if !c.Made {
		switch {
		case c.Why == "":
			return fmt.Errorf("check.made is false without check.why")
		case c.Agree || len(c.Rows) > 0:
			return fmt.Errorf("check.made is false but it has rows or agrees")
		}
		return nil
	}
	agree := true
	for i, r := range c.Rows {
		switch {
		case r.Reason == "":
			return fmt.Errorf("check.rows[%d].reason is empty", i)
		case r.Gate == "" && r.Server == "":
			return fmt.Errorf("check.rows[%d] names neither a gate nor a server row", i)
		case r.GateCount < 0 || r.Populations < 0 || r.BeforeHello < 0:
			return fmt.Errorf("check.rows[%d] has a negative count", i)
		}
		agree = agree && r.Agrees()
	}
	if agree != c.Agree {
		return fmt.Errorf("check.agree is %v but its rows say %v", c.Agree, agree)
	}
	return nil
}

// ServerViewNote is one line on v's server view for a summary: whether the
// gate and the server agreed, on how many counts, and the first
// disagreements; "" when v has none.
func (v *Variant) ServerViewNote() string {
	s := v.Server
	if s == nil {
		return ""
	}
	c := &s.Check
	if !c.Made {
		return "server view: not compared (" + c.Why + ")"
	}
	n, bad := c.Compared()
	if bad == 0 {
		return fmt.Sprintf("server view: the gate and the server's populations agree on all %d comparable counts", n)
	}
	var what []string
	for _, r := range c.Rows {
		if !r.Agrees() && len(what) < 3 {
			what = append(what, fmt.Sprintf("%s %s: gate %d, server %d", r.Gate, r.Reason, r.GateCount, r.Populations+r.BeforeHello))
		}
	}
	return fmt.Sprintf("server view: DISAGREES on %d of %d comparable counts (%s)", bad, n, strings.Join(what, "; "))
}

var serverViewTmpl = template.Must(template.New("server").Parse(`<h3>The server's view</h3>
{{with .Check}}{{if not .Made}}<p class="muted">The gate's counts were not compared with the server's populations: {{.Why}}.</p>
{{else}}{{if $.Agree}}<p>The gate and the server's per-population counters agree on all {{$.Compared}} comparable counts over the whole run.</p>
{{else}}<div class="banner warn">The gate and the server's per-population counters DISAGREE on {{$.Bad}} of {{$.Compared}} comparable counts over the whole run.</div>
{{end}}<div class="scroll"><table>
<tr><th>gate rows</th><th>server rows</th><th>reason</th><th class="num">gate</th><th class="num">populations</th><th class="num">before Hello</th><th>agree</th></tr>
{{range $.Rows}}<tr><td>{{.Gate}}</td><td>{{.Server}}</td><td>{{.Reason}}</td><td class="num">{{.GateCount}}</td><td class="num">{{.Populations}}</td><td class="num">{{.BeforeHello}}</td><td>{{if not .Compared}}<span class="muted">not compared: {{.Note}}</span>{{else if .Agrees}}yes{{else}}<strong>NO</strong>{{end}}</td></tr>
{{end}}</table></div>
<p class="muted">Counts over the whole run, from before the first client dialled to after the server closed the last connection. Gate: the server's core.Gate counters (what its metrics export). Populations: the server's counters of the run's populations, which the populations' server decisions above are read from. Before Hello: frames of connections that had not said Hello yet, which the harness attributes to no population. A row agrees when gate = populations + before Hello. The server's own refusals of a message the gate accepted (QueueFull, Closed) count as accepted by the gate.</p>
{{end}}{{end}}<h4>Gate counts in the measured window</h4>
<div class="scroll"><table>
<tr><th>gate row or counter</th><th>counts</th></tr>
{{range .Messages}}<tr><td>{{.K}}</td><td>{{.V}}</td></tr>
{{end}}{{range .Other}}<tr><td>{{.K}}</td><td>{{.V}}</td></tr>
{{end}}</table></div>
`))

type serverKV struct{ K, V string }

// reasonList renders a count map as "A 3, B 2", largest first.
func reasonList(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// serverViewHTML renders v's server view for the report, or nothing.
func serverViewHTML(v *Variant) (template.HTML, error) {
	s := v.Server
	if s == nil {
		return "", nil
	}
	n, bad := s.Check.Compared()
	d := struct {
		Check           *ServerCheck
		Rows            []ServerCheckRow
		Agree           bool
		Compared, Bad   int
		Messages, Other []serverKV
	}{Check: &s.Check, Rows: s.Check.Rows, Agree: bad == 0, Compared: n, Bad: bad}
	rows := make([]string, 0, len(s.Window.Messages))
	for k := range s.Window.Messages {
		rows = append(rows, k)
	}
	sort.Strings(rows)
	for _, k := range rows {
		d.Messages = append(d.Messages, serverKV{k, reasonList(s.Window.Messages[k])})
	}
	w := &s.Window
	for _, kv := range []struct {
		k string
		m map[string]int64
	}{{"actions", w.Actions}, {"transport floods", w.Floods}, {"transport flood bytes", w.FloodBytes}, {"strike stage rises", w.StageRises}} {
		if len(kv.m) > 0 {
			d.Other = append(d.Other, serverKV{kv.k, reasonList(kv.m)})
		}
	}
	d.Other = append(d.Other,
		serverKV{"transport floods (gate total)", fmt.Sprint(w.FloodsTotal)},
		serverKV{"lockouts", fmt.Sprint(w.Lockouts)},
		serverKV{"table-full refusals", fmt.Sprint(w.TableFull)})
	if w.Shadowed > 0 {
		d.Other = append(d.Other, serverKV{"shadowed", fmt.Sprint(w.Shadowed)})
	}
	var b bytes.Buffer
	if err := serverViewTmpl.Execute(&b, d); err != nil {
		return "", fmt.Errorf("reports: server view of %q: %w", v.Name, err)
	}
	return template.HTML(b.String()), nil
}
