package loadgen

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/sim"
	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/sim_golden.txt from the current sim")

// goldenFile holds, per case, the SHA-256 of a sim run's Canonical
// encoding followed by its per-kind decisions (which Canonical leaves
// out): any change to what the sim computes for a fixed seed shows here.
const goldenFile = "testdata/sim_golden.txt"

// goldenDigest hashes r.Canonical() and every population's KindDecisions.
func goldenDigest(t testing.TB, r *Result) string {
	t.Helper()
	// Canonical leaves Stats.Overdue out, as virtual time never falls
	// behind its schedule: held here instead.
	require.Zero(t, r.Recorder.Stats.Overdue, "a sim run fell behind its schedule")
	b := canonical(t, r)
	for p := range r.Labels {
		for k := range behave.NumKinds {
			for _, v := range r.Recorder.KindDecisions(p, k) {
				b = binary.AppendVarint(b, v)
			}
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// goldenCases are fixed sim runs covering every behaviour, the warm-up,
// the series, stalls and the worker's caps.
func goldenCases(t testing.TB) []struct {
	name string
	run  func(t testing.TB) *Result
} {
	type gc = struct {
		name string
		run  func(t testing.TB) *Result
	}
	spec := func(s RunSpec) func(t testing.TB) *Result {
		return func(t testing.TB) *Result { return runSim(t, s, behave.DefaultPolicy()) }
	}
	cases := []gc{
		{"mixed-7-warmup", spec(RunSpec{Plan: mixedPlan(7, 8*time.Second), Warmup: time.Second})},
		{"mixed-3", spec(RunSpec{Plan: mixedPlan(3, 10*time.Second)})},
		{"mixed-5-interval", spec(RunSpec{Plan: mixedPlan(5, 6*time.Second), Interval: 250 * time.Millisecond, TickRate: 60})},
		{"mixed-9-caps", spec(RunSpec{Plan: mixedPlan(9, 6*time.Second), Config: drive.RunConfig{MaxPending: 2, MaxHeld: 200, Timeout: 300 * time.Millisecond}})},
		{"mixed-4-maxactions", spec(RunSpec{Plan: mixedPlan(4, 6*time.Second), Config: drive.RunConfig{MaxActions: 5000}})},
		{"throughput", spec(RunSpec{Plan: throughputPlan()})},
		// bench/sim_test.go's simPlan.
		{"bench-sim", spec(RunSpec{Plan: behave.Plan{Seed: 1, Duration: 10 * time.Second, Populations: []behave.Population{
			{Name: "honest", Clients: 50, Behaviour: &behave.Honest{}},
			{Name: "laggy", Clients: 5, Behaviour: &behave.Laggy{}},
			{Name: "tiny", Clients: 2, Behaviour: &behave.TinyFlood{}, Hostile: true},
			{Name: "bad", Clients: 2, Behaviour: &behave.BadLength{}, Hostile: true},
		}}})},
		{"stalls", func(t testing.TB) *Result {
			plan := mixedPlan(13, 8*time.Second)
			clients := plan.Clients()
			labels := plan.Labels()
			rec, err := record.NewRecorder(labels, record.HistConfig{})
			require.NoError(t, err)
			ser := record.NewSeries(len(labels), int64(time.Second), int64(plan.Duration))
			var w *drive.Worker
			simDriver, err := sim.NewSim(behave.DefaultPolicy(), sim.SimConfig{
				Stalls:     []sim.Stall{{At: 2 * time.Second, For: 700 * time.Millisecond}, {At: 2700 * time.Millisecond, For: 300 * time.Millisecond}, {At: 5 * time.Second, For: 40 * time.Second}},
				OnDecision: func(pop int, k behave.Kind, o record.Outcome, at int64) { w.Decide(at, pop, k, o, 1) },
			}, clients)
			require.NoError(t, err)
			w, err = drive.NewWorker(simDriver, rec, clients, drive.RunConfig{})
			require.NoError(t, err)
			w.SetSeries(ser)
			require.NoError(t, w.Run(context.Background()))
			res := newResult(labels, rec, ser, []*drive.Worker{w}, true, plan.Duration, plan.Duration)
			res.Frames = simDriver.Frames()
			return res
		}},
	}
	for _, name := range tcpBehaviourNames() {
		b, err := behave.NewBehaviour(name)
		require.NoError(t, err)
		plan := behave.Plan{Seed: 11, Duration: 4 * time.Second, Populations: []behave.Population{
			{Name: "bystander", Clients: 2, Behaviour: &behave.Honest{}},
			{Name: name, Clients: 3, Behaviour: b, PerAccount: 3},
		}}
		cases = append(cases, gc{"behaviour-" + name, spec(RunSpec{Plan: plan, Config: drive.RunConfig{Timeout: 500 * time.Millisecond}})})
	}
	// A slowloris long enough for the server's partial-frame timeout (5 s)
	// to cut its frames, and for it to reconnect and start them afresh.
	cases = append(cases, gc{"slowloris-reconnects", spec(RunSpec{Plan: behave.Plan{Seed: 17, Duration: 16 * time.Second, Populations: []behave.Population{
		{Name: "slow", Clients: 3, Behaviour: &behave.Slowloris{}},
		{Name: "slow-session", Clients: 2, Behaviour: &behave.Slowloris{Session: true}},
	}}})})
	return cases
}

// throughputPlan is BenchmarkSimThroughput's plan.
func throughputPlan() behave.Plan {
	return behave.Plan{Seed: 1, Duration: 10 * time.Second, Populations: []behave.Population{
		{Name: "honest", Clients: 200, Behaviour: &behave.Honest{}},
		{Name: "laggy", Clients: 20, Behaviour: &behave.Laggy{}},
		{Name: "tiny-flood", Clients: 4, Behaviour: &behave.TinyFlood{}},
		{Name: "byte-flood", Clients: 4, Behaviour: &behave.ByteFlood{}},
	}}
}

// TestSimGolden checks that fixed sim runs give the results committed in
// testdata/sim_golden.txt, byte for byte (through a SHA-256): the sim's
// results for a seed never change by accident, for instance in an
// optimisation. Run with -update-golden after an intended change.
func TestSimGolden(t *testing.T) {
	got := map[string]string{}
	var order []string
	for _, c := range goldenCases(t) {
		got[c.name] = goldenDigest(t, c.run(t))
		order = append(order, c.name)
	}
	if *updateGolden {
		var sb strings.Builder
		for _, n := range order {
			fmt.Fprintf(&sb, "%s %s\n", n, got[n])
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(goldenFile), 0o755))
		require.NoError(t, os.WriteFile(goldenFile, []byte(sb.String()), 0o644))
		return
	}
	f, err := os.Open(goldenFile)
	require.NoError(t, err)
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, sum, ok := strings.Cut(sc.Text(), " ")
		require.True(t, ok, "bad line %q", sc.Text())
		want[name] = sum
	}
	require.NoError(t, sc.Err())
	require.Len(t, want, len(order), "cases")
	for _, n := range order {
		require.Equal(t, want[n], got[n], "case %s: the sim's results changed", n)
	}
}
