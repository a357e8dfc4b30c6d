package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"slices"
	"sort"
	"time"
)

// GameServer is what one game server of a run of several admitted: per
// population name, the messages (inputs and requests) its gate accepted
// in the measured window. A variant of several servers lists them all
// (Variant.Servers); the fleet-wide count of a population is the sum over
// them. Absent for a run of one server.
type GameServer struct {
	Name     string           `json:"name"`
	Admitted map[string]int64 `json:"admitted"`
}

// validate checks a variant's servers against its populations.
func validateServers(v *Variant) error {
	pops := map[string]bool{}
	for _, p := range v.Populations {
		pops[p.Name] = true
	}
	seen := map[string]bool{}
	for i, s := range v.Servers {
		if s.Name == "" {
			return fmt.Errorf("servers[%d] has no name", i)
		}
		if seen[s.Name] {
			return fmt.Errorf("server %q appears twice", s.Name)
		}
		seen[s.Name] = true
		for p, n := range s.Admitted {
			if !pops[p] {
				return fmt.Errorf("server %q: admitted counts population %q, which the variant lacks", s.Name, p)
			}
			if n < 0 {
				return fmt.Errorf("server %q: admitted %d for %q is negative", s.Name, n, p)
			}
		}
	}
	return nil
}

// FleetAdmitted returns, per population name, the messages the variant's
// servers admitted together (nil for a run of one server).
func (v *Variant) FleetAdmitted() map[string]int64 {
	if len(v.Servers) == 0 {
		return nil
	}
	out := map[string]int64{}
	for _, s := range v.Servers {
		for p, n := range s.Admitted {
			out[p] += n
		}
	}
	return out
}

// Measured returns the variant's measured time in run: from the warm-up
// to the end, or to where it stopped. Rates per second are over it.
func (v *Variant) Measured(run *Run) time.Duration {
	end := run.Duration
	if v.Stopped > 0 {
		end = v.Stopped
	}
	return max(end-run.Warmup, 0)
}

var serversTmpl = template.Must(template.New("servers").Parse(`<h3>Game servers</h3>
<div class="scroll"><table>
<tr><th>population</th>{{range .Servers}}<th class="num">{{.}}</th>{{end}}<th class="num">fleet-wide</th></tr>
{{range .Rows}}<tr><td>{{.Population}}</td>{{range .Cells}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</table></div>
<p class="muted">Messages (inputs and requests) each server's gate admitted per second of measured time, and all of them together: what a limit kept per server lets through, against one shared by the fleet.</p>
`))

// serversHTML renders the variant's game servers for the report, or
// nothing for a run of one.
func serversHTML(run *Run, v *Variant) (template.HTML, error) {
	if len(v.Servers) == 0 {
		return "", nil
	}
	secs := v.Measured(run).Seconds()
	rate := func(n int64) string {
		if secs <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f/s", float64(n)/secs)
	}
	type row struct {
		Population string
		Cells      []string
	}
	d := struct {
		Servers []string
		Rows    []row
	}{}
	for _, s := range v.Servers {
		d.Servers = append(d.Servers, s.Name)
	}
	fleet := v.FleetAdmitted()
	var pops []string
	for _, p := range v.Populations {
		if _, ok := fleet[p.Name]; ok {
			pops = append(pops, p.Name)
		}
	}
	sort.Strings(pops)
	for _, p := range pops {
		r := row{Population: p}
		for _, s := range v.Servers {
			r.Cells = append(r.Cells, rate(s.Admitted[p]))
		}
		r.Cells = append(r.Cells, rate(fleet[p]))
		d.Rows = append(d.Rows, r)
	}
	var b bytes.Buffer
	if err := serversTmpl.Execute(&b, d); err != nil {
		return "", fmt.Errorf("reports: servers of %q: %w", v.Name, err)
	}
	return template.HTML(b.String()), nil
}

// mergeServers adds from's game servers' counts into v's, server by name
// (segments of a run of several servers each drove their own).
func mergeServers(v, from *Variant) {
	for _, fs := range from.Servers {
		i := slices.IndexFunc(v.Servers, func(s GameServer) bool { return s.Name == fs.Name })
		if i < 0 {
			v.Servers = append(v.Servers, GameServer{Name: fs.Name, Admitted: map[string]int64{}})
			i = len(v.Servers) - 1
		}
		for p, n := range fs.Admitted {
			v.Servers[i].Admitted[p] += n
		}
	}
}
