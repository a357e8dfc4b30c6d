package scenario_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicedev/sluice/bench/gate"
	"github.com/sluicedev/sluice/bench/gate/scenario"
	"github.com/sluicedev/sluice/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func find(t *testing.T, rep *gate.Report, name, unit string) gate.Comparison {
	t.Helper()
	for _, c := range rep.Comparisons {
		if c.Benchmark == name && c.Unit == unit {
			return c
		}
	}
	t.Fatalf("no comparison of %s %s", name, unit)
	return gate.Comparison{}
}

func TestSet(t *testing.T) {
	run := func(seed uint64, honestDrop float64, leaked float64) *reports.Results {
		r := reports.New(reports.Run{Scenario: "flood", Seed: seed, Driver: reports.DriverSim, Complete: true}, reports.Environment{})
		v, err := r.AddVariant("strict", nil)
		require.NoError(t, err)
		h := v.AddPopulation("players", "honest", reports.Honest, 100)
		h.Summary = reports.Summary{DropRate: &honestDrop, ResponseP50: 1e6, ResponseP99: 5e6}
		x := v.AddPopulation("flooders", "tiny-flood", reports.Hostile, 10)
		x.Summary = reports.Summary{AdmittedPerSec: leaked, CutOff: &reports.CutOff{Clients: 10, Of: 10, P50: time.Second, Max: 2 * time.Second, AllP50: time.Second}}
		return r
	}
	var base, cand []*reports.Results
	for seed := uint64(1); seed <= 8; seed++ {
		f := float64(seed)
		base = append(base, run(seed, 0.001+0.0001*f, 300+f))
		cand = append(cand, run(seed, 0.002+0.0001*f, 300+f))
	}
	bs, err := scenario.Set("base", base...)
	require.NoError(t, err)
	cs, err := scenario.Set("cand", cand...)
	require.NoError(t, err)
	rep, err := gate.Compare(bs, cs, scenario.Config())
	require.NoError(t, err)
	regs := rep.Regressions()
	require.Len(t, regs, 1)
	assert.Equal(t, "Scenario/flood/strict/players", regs[0].Benchmark)
	assert.Equal(t, scenario.UnitDropRate, regs[0].Unit)
	assert.Equal(t, gate.Unchanged, find(t, rep, "Scenario/flood/strict/flooders", scenario.UnitAdmittedPerSec).Verdict)
	assert.Equal(t, gate.Unchanged, find(t, rep, "Scenario/flood/strict/flooders", scenario.UnitCutOffMax).Verdict)

	// The same through results files.
	dir := t.TempDir()
	var files []string
	for i, r := range cand {
		p := filepath.Join(dir, fmt.Sprintf("run%d.json", i))
		require.NoError(t, reports.WriteFile(p, r))
		files = append(files, p)
	}
	fs, err := scenario.ReadFiles("cand files", files...)
	require.NoError(t, err)
	rep, err = gate.Compare(bs, fs, scenario.Config())
	require.NoError(t, err)
	assert.Len(t, rep.Regressions(), 1)
	_, err = scenario.ReadFiles("x", filepath.Join(dir, "missing.json"))
	assert.Error(t, err)

	bad := run(1, 0, 0)
	bad.Run.Complete = false
	_, err = scenario.Set("x", bad)
	assert.Error(t, err)
	_, err = scenario.Set("x")
	assert.True(t, errors.Is(err, gate.ErrNoResults))
}
