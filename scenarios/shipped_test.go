package scenarios

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedev/sluice/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// shipped are the scenario files that ship beside this package.
func shipped(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	want := []string{"channel-hop", "fleet-hop", "flood-mix", "honest-only", "key-churn", "lag-storm", "mixed-transports", "nat-crowd", "policy-compare", "quickstart", "reconnect-reset", "replay-compare", "slot-hold"}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(f, ".yaml"))
	}
	require.Equal(t, want, names)
	return files
}

// Every shipped scenario meets its expected outcome in sim mode: variants
// expected to pass hold every threshold, those kept as bad examples fail.
func TestShippedScenariosMeetTheirThresholdsInSim(t *testing.T) {
	for _, f := range shipped(t) {
		t.Run(f, func(t *testing.T) {
			s, err := Load(f)
			require.NoError(t, err)
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(data), "# "+s.Name+":"), "a header comment says what the scenario shows")
			out, err := Run(context.Background(), s, Options{Driver: DriverSim})
			require.NoError(t, err)
			require.True(t, out.Results.Run.Complete)
			for _, v := range out.Results.Variants {
				for _, th := range v.Thresholds {
					t.Logf("%s: %v %s (%v)", v.Name, th.Pass, th.Expr, th.Value)
				}
				assert.Empty(t, v.Invalid, "variant %s", v.Name)
			}
			assert.True(t, out.Passed, "unexpected outcome for %v", out.Unexpected)
		})
	}
}

func TestSimRunsAreByteIdenticalForTheSameSeed(t *testing.T) {
	s, err := Load("quickstart.yaml")
	require.NoError(t, err)
	run := func(seed uint64) []byte {
		out, err := Run(context.Background(), s, Options{Seed: &seed, Policy: "balanced"})
		require.NoError(t, err)
		r := out.Results
		// Wall-clock facts differ between any two runs; the measurements
		// must not.
		r.Run.Started, r.Run.Finished = time.Unix(0, 0).UTC(), time.Unix(0, 0).UTC()
		for _, v := range r.Variants {
			v.ServerCPU = nil
		}
		data, err := reports.Marshal(r)
		require.NoError(t, err)
		return data
	}
	a, b := run(7), run(7)
	assert.Equal(t, a, b, "same seed, same bytes")
	assert.NotEqual(t, a, run(8), "another seed changes the results")
}

func TestQuickstartPassesOverLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s run over real sockets")
	}
	s, err := Load("quickstart.yaml")
	require.NoError(t, err)
	out, err := Run(context.Background(), s, Options{Driver: DriverLoopback, Policy: "balanced"})
	require.NoError(t, err)
	v := out.Results.Variants[0]
	for _, th := range v.Thresholds {
		t.Logf("%v %s (%v)", th.Pass, th.Expr, th.Value)
	}
	if len(v.Invalid) > 0 {
		t.Skipf("the machine could not keep the load generator's schedule: %v", v.Invalid)
	}
	assert.True(t, out.Passed)
}

// Removing the account layer and the strikes from reconnect-reset's first
// variant lets the attacker through: its thresholds fail, and the run says
// that variant failed unexpectedly.
func TestBreakingAPolicyFailsItsThresholds(t *testing.T) {
	s, err := Load("reconnect-reset.yaml")
	require.NoError(t, err)
	broken := *s
	broken.Variants = append([]Variant(nil), s.Variants...)
	doc := "account: {disabled: true}\nstrikes: {disabled: true}"
	broken.Variants[0].Set = mustNode(t, doc)
	out, err := Run(context.Background(), &broken, Options{})
	require.NoError(t, err)
	assert.False(t, out.Passed)
	assert.Equal(t, []string{"strike-memory"}, out.Unexpected)
}

func mustNode(t *testing.T, doc string) yaml.Node {
	t.Helper()
	var n yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(doc), &n))
	return *n.Content[0]
}

// The results record each variant's description and what it was expected
// to do, so a report rendered from the file alone can say that a variant
// kept as a bad example failed as expected.
func TestResultsRecordDescriptionAndExpect(t *testing.T) {
	s, err := Load("reconnect-reset.yaml")
	require.NoError(t, err)
	out, err := Run(context.Background(), s, Options{})
	require.NoError(t, err)
	data, err := reports.Marshal(out.Results)
	require.NoError(t, err)
	r, err := reports.Unmarshal(data)
	require.NoError(t, err)
	require.Len(t, r.Variants, 2)
	for i, v := range s.Variants {
		got := r.Variants[i]
		assert.Equal(t, v.Description, got.Description, "variant %s", v.Name)
		want := reports.ExpectPass
		if v.Expect == "fail" {
			want = reports.ExpectFail
		}
		assert.Equal(t, want, got.Expect, "variant %s", v.Name)
		assert.True(t, got.AsExpected(), "variant %s: %s", v.Name, got.Verdict())
	}
	assert.Equal(t, reports.ExpectFail, r.Variants[1].Expect)
	assert.NotEmpty(t, r.Variants[0].Description)
}
