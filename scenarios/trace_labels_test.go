package scenarios

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/reports"
)

// replayLabelled is replay-compare.yaml's header and policy with the
// populations and thresholds given, and its recorded variant only.
func replayLabelled(t *testing.T, populations string) []byte {
	t.Helper()
	b, err := os.ReadFile("replay-compare.yaml")
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(b), "\nvariants:")
	if !ok {
		t.Fatal("replay-compare.yaml has no variants")
	}
	return []byte(head + "\npopulations:\n" + populations)
}

// Labels on trace populations: a rule relabels the sessions it names, the
// populations that select a label replay those sessions, take its role,
// and the report says where their labels came from.
func TestTraceLabelsScenario(t *testing.T) {
	// Session 1 of the quickstart trace is an honest laggy player; the
	// rules make it, and every session the recording gate disconnected,
	// hostile.
	const rules = `labels: [{sessions: [1], label: hostile}, {decision: Disconnect, label: hostile}]`
	doc := replayLabelled(t, `
  - name: clean
    behaviour: trace
    params: {file: traces/quickstart.trace, label: honest, `+rules+`}
  - name: cut
    behaviour: trace
    params: {file: traces/quickstart.trace, label: hostile, `+rules+`}
`)
	s, err := Parse(doc, "labels.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pops := map[string]*reports.Population{}
	for _, p := range out.Results.Variants[0].Populations {
		pops[p.Name] = p
	}
	clean, cut := pops["clean"], pops["cut"]
	if clean == nil || cut == nil {
		t.Fatalf("populations %v", pops)
	}
	// The trace labels 50 sessions honest and 109 hostile; none of the
	// honest ones was disconnected, so the rules move session 1 only.
	if clean.Clients != 49 || cut.Clients != 110 {
		t.Fatalf("clean replayed %d sessions, cut %d; want 49 and 110", clean.Clients, cut.Clients)
	}
	if clean.Role != reports.Honest || cut.Role != reports.Hostile {
		t.Fatalf("roles %v, %v", clean.Role, cut.Role)
	}
	want := "trace (sessions labelled hostile, by its labels rules, else the trace's labels)"
	if cut.Behaviour != want {
		t.Fatalf("behaviour %q, want %q", cut.Behaviour, want)
	}
}

// A bad label rule is an error naming its field in the file.
func TestTraceLabelsScenarioErrors(t *testing.T) {
	for _, c := range []struct{ params, want string }{
		{`{file: traces/quickstart.trace, labels: [{sessions: [1], label: hostile}, {sessions: [2], label: evil}]}`, "populations[0].params.labels[1].label"},
		{`{file: traces/quickstart.trace, labels: [{addresses: [nope], label: hostile}]}`, "populations[0].params.labels[0].addresses[0]"},
		{`{file: traces/quickstart.trace, labels: [{decision: Drop Nope, label: hostile}]}`, "populations[0].params.labels[0].decision"},
		{`{file: traces/quickstart.trace, label: evil}`, "populations[0].params.label"},
		{`{file: traces/quickstart.trace, labels: [{sessions: [1], label: hostile, why: x}]}`, "why"},
	} {
		doc := replayLabelled(t, "  - name: p\n    behaviour: trace\n    params: "+c.params+"\n")
		_, err := Parse(doc, "labels.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.params, err, c.want)
		}
	}
}
