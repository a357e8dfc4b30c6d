package scenarios

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/sim"
	"github.com/sluicedev/sluice/trace"
)

// recordSim runs variant name of scenario file in sim, recording a trace
// to path, and returns the result.
func recordSim(t *testing.T, file, name, path string) (*loadgen.Result, behave.Plan, NamedPolicy, *Scenario) {
	t.Helper()
	s, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	eff, variants, plan, err := s.prepare(Options{Policy: name})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := trace.NewWriter(f, trace.Header{Recorder: "test", PolicyDigest: trace.PolicyDigest(variants[0].Policy)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := loadgen.RunSim(context.Background(), loadgen.RunSpec{Plan: plan, Warmup: eff.Warmup, Interval: eff.Interval, Record: w}, variants[0].Policy)
	if err != nil {
		t.Fatal(err)
	}
	return res, plan, variants[0], eff
}

// The round trip: quickstart in sim, recorded, then replayed from its
// trace (one trace population per recorded population, by the group its
// sessions were labelled with) under the same policy, gives the same
// server decisions, population by population, kind by kind, reason by
// reason.
func TestTraceRoundTripQuickstart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quickstart.trace")
	orig, plan, pol, eff := recordSim(t, "quickstart.yaml", "balanced", path)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	rp := behave.Plan{Seed: plan.Seed, Duration: plan.Duration}
	for _, pop := range plan.Populations {
		rp.Populations = append(rp.Populations, behave.Population{
			Name: pop.Name, Clients: 1, Hostile: pop.Hostile,
			Behaviour: &sim.Trace{File: path, Group: pop.Name},
		})
	}
	rep, err := loadgen.RunSim(context.Background(), loadgen.RunSpec{Plan: rp, Warmup: eff.Warmup, Interval: eff.Interval}, pol.Policy)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for p := range plan.Populations {
		for k := range behave.NumKinds {
			want, got := orig.Recorder.KindDecisions(p, behave.Kind(k)), rep.Recorder.KindDecisions(p, behave.Kind(k))
			if want != got {
				t.Errorf("%s/%v: replayed %v, recorded run %v", plan.Populations[p].Name, behave.Kind(k), got, want)
			}
			for _, n := range want {
				total += n
			}
		}
	}
	if total == 0 {
		t.Fatal("no decisions compared")
	}
	for p := range plan.Populations {
		t.Logf("%s: %v", plan.Populations[p].Name, orig.Recorder.Decisions(p))
	}
	t.Logf("%d decisions compared; trace %d bytes", total, st.Size())
}
