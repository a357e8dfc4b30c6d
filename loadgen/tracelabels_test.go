package loadgen

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/sim"
	"github.com/sluicedev/sluice/trace"
)

// relabelTrace rewrites the trace at path through mod, which may change a
// record; it returns the new trace's path.
func relabelTrace(t *testing.T, path string, mod func(r *trace.Record)) string {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	r, err := trace.NewReader(in, trace.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "relabelled.trace")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := trace.NewWriter(f, r.Header())
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		mod(rec)
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// moveCount is how many move frames population pop had decided.
func moveCount(r *Result, pop int) (n int64) {
	for _, c := range r.Recorder.KindDecisions(pop, behave.KindMove) {
		n += c
	}
	return n
}

// Labels relabel sessions by number, account and recorded decision, and
// populations that select a label replay the sessions labelled so: the
// sessions the rules name move from the honest population to the hostile
// one, every one of their frames with them.
func TestTraceLabels(t *testing.T) {
	path, d := matchTrace(t, 20, 2000) // every session labelled honest, 100 moves each
	// Session 7's 50th move was dropped by the recording gate.
	moves := 0
	path = relabelTrace(t, path, func(r *trace.Record) {
		if r.Op == trace.OpMessage && r.Session == 7 {
			if moves++; moves == 50 {
				r.Decision = trace.Decision{Action: core.Drop, Reason: core.ChannelLimit}
			}
		}
	})
	rules := []sim.TraceLabelRule{
		{Sessions: []uint64{1, 2}, Label: "hostile"},
		{Accounts: []uint64{5}, Label: "hostile"},
		{Decision: "Drop ChannelLimit", Label: "hostile"},
		{Sessions: []uint64{2}, Label: "honest"}, // too late: the first rule named session 2
	}
	run := func(rules []sim.TraceLabelRule) *Result {
		t.Helper()
		plan := behave.Plan{Seed: 1, Duration: d + time.Second, Populations: []behave.Population{
			{Name: "players", Clients: 1, Behaviour: &sim.Trace{File: path, Label: "honest", Labels: rules}},
			{Name: "cheaters", Clients: 1, Behaviour: &sim.Trace{File: path, Label: "hostile", Labels: rules}, Hostile: true},
		}}
		res, err := RunSim(context.Background(), RunSpec{Plan: plan}, behave.DefaultPolicy())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(rules)
	if got := moveCount(res, 1); got != 4*100 {
		t.Fatalf("the hostile population decided %d moves, want 400 (sessions 1, 2, 5 and 7)", got)
	}
	if got := moveCount(res, 0); got != 16*100 {
		t.Fatalf("the honest population decided %d moves, want 1600", got)
	}
	// Without rules, every session keeps the trace's label: honest.
	res = run(nil)
	if got0, got1 := moveCount(res, 0), moveCount(res, 1); got0 != 2000 || got1 != 0 {
		t.Fatalf("without labels: %d honest, %d hostile moves", got0, got1)
	}
	// A decision without a reason matches any reason of that action.
	res = run([]sim.TraceLabelRule{{Decision: "Drop", Label: "hostile"}})
	if got := moveCount(res, 1); got != 100 {
		t.Fatalf("decision Drop: %d hostile moves, want session 7's 100", got)
	}
}

// Bad labels are refused with the field that is wrong.
func TestTraceLabelsValidate(t *testing.T) {
	for _, c := range []struct {
		tr    sim.Trace
		field string
	}{
		{sim.Trace{File: "t", Label: "evil"}, "Label"},
		{sim.Trace{File: "t", Labels: []sim.TraceLabelRule{{Sessions: []uint64{1}, Label: "evil"}}}, "Labels[0].Label"},
		{sim.Trace{File: "t", Labels: []sim.TraceLabelRule{{Sessions: []uint64{1}, Label: "hostile"}, {Label: "hostile"}}}, "Labels[1].Label"},
		{sim.Trace{File: "t", Labels: []sim.TraceLabelRule{{Sessions: []uint64{0}, Label: "hostile"}}}, "Labels[0].Sessions"},
		{sim.Trace{File: "t", Labels: []sim.TraceLabelRule{{Addresses: []string{"10.0.0.1", "nope"}, Label: "hostile"}}}, "Labels[0].Addresses[1]"},
		{sim.Trace{File: "t", Labels: []sim.TraceLabelRule{{Decision: "Drop Nope", Label: "hostile"}}}, "Labels[0].Decision"},
		{sim.Trace{File: "t", Labels: []sim.TraceLabelRule{{Decision: "Refuse", Label: "hostile"}}}, "Labels[0].Decision"},
	} {
		err := c.tr.Validate()
		var pe *behave.ParamError
		if !errors.As(err, &pe) || pe.Field != c.field {
			t.Errorf("%+v: error %v, want one for field %s", c.tr, err, c.field)
		}
	}
	ok := sim.Trace{File: "t", Label: "hostile", Labels: []sim.TraceLabelRule{{Addresses: []string{"10.0.0.1", "::1", "00000000000000ff"}, Label: "unknown"}}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}
