package ab_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/bench/ab"
	"github.com/sluicedev/sluice/bench/gate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A throwaway module in its own git repository: a floor and a benchmark
// whose work triples under the build tag abtest_slow.
var files = map[string]string{
	"go.mod": "module example.com/abtest\n\ngo 1.26\n",
	"bench/work_test.go": `package bench

import "testing"

var sink uint64

func work(n int) uint64 {
	x := uint64(1)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

func BenchmarkFloor(b *testing.B) {
	b.Run("cas", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink += work(1)
		}
	})
}

func BenchmarkWork(b *testing.B) {
	for i := 0; i < b.N; i++ {
		sink += work(64 * factor)
	}
}
`,
	"bench/fast_test.go": "//go:build !abtest_slow\n\npackage bench\n\nconst factor = 1\n",
	"bench/slow_test.go": "//go:build abtest_slow\n\npackage bench\n\nconst factor = 3\n",
}

func repo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return dir
}

func gateCfg() *gate.Config {
	// Generous thresholds: this test is about the plumbing, on a machine
	// that may be busy; the gate's power is measured in bench/README.md.
	c := gate.Config{MinEffect: 0.5, Rules: []gate.Rule{
		{Match: "^Floor/", Role: gate.RoleFloor},
		{Match: "^Work$", Floor: "Floor/cas"},
	}}
	return &c
}

func TestRun(t *testing.T) {
	dir := repo(t)
	var progress bytes.Buffer
	save := t.TempDir()
	cfg := ab.Config{
		BaseRev: "HEAD",
		Dir:     dir,
		// The tool's default: with 6 a side, a busy machine that slowed a
		// few base samples left a 3x slowdown short of significance
		// (p 0.09 once, on 2 loaded cores).
		Count:     ab.DefaultCount,
		BenchTime: "200000x", // about 10 ms a sample: one preemption cannot decide it
		CandTags:  []string{"abtest_slow"},
		Gate:      gateCfg(),
		SaveDir:   save,
		Progress:  &progress,
	}
	rep, err := ab.Run(context.Background(), cfg)
	require.NoError(t, err)
	require.True(t, rep.Regressed(), "a 3x slowdown: %+v", rep.Comparisons)
	regs := rep.Regressions()
	require.Len(t, regs, 1)
	assert.Equal(t, "Work", regs[0].Benchmark)
	assert.Equal(t, ab.DefaultCount, regs[0].BaseN)
	assert.Equal(t, ab.DefaultCount, regs[0].CandN)
	assert.Contains(t, progress.String(), fmt.Sprintf("sample %d/%d", ab.DefaultCount, ab.DefaultCount))
	assert.NotEmpty(t, rep.Base.Facts["cpu-logical-cores"])
	assert.Regexp(t, "^[0-9a-f]{40}$", rep.Base.Facts["commit"])
	assert.Regexp(t, "^working tree on [0-9a-f]{40}$", rep.Cand.Facts["commit"])

	// The samples were saved, marked by run, and read back the same.
	base, err := gate.ReadFiles(filepath.Join(save, "base.txt"))
	require.NoError(t, err)
	assert.Len(t, base.Results, 2*ab.DefaultCount)
	b, err := os.ReadFile(filepath.Join(save, "cand.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(b), fmt.Sprintf("run: %d\n", ab.DefaultCount-1))

	// The worktree is gone.
	cmd := exec.Command("git", "worktree", "list")
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(string(out)), "\n")+1, "%s", out)

	// The same code on both sides passes.
	cfg.CandTags, cfg.SaveDir = nil, ""
	rep, err = ab.Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.False(t, rep.Regressed(), "%+v", rep.Regressions())

	// Too few samples is an error, not a pass.
	cfg.Count = 3
	rep, err = ab.Run(context.Background(), cfg)
	assert.ErrorIs(t, err, gate.ErrTooFewSamples)
	require.NotNil(t, rep)
}

func TestRunErrors(t *testing.T) {
	dir := repo(t)
	_, err := ab.Run(context.Background(), ab.Config{Dir: dir})
	assert.ErrorIs(t, err, ab.ErrConfig)
	_, err = ab.Run(context.Background(), ab.Config{Dir: dir, BaseRev: "no-such-rev"})
	assert.ErrorContains(t, err, "no-such-rev")
	_, err = ab.Run(context.Background(), ab.Config{Dir: dir, BaseRev: "HEAD", Packages: []string{"./nope"}})
	assert.Error(t, err)
	_, err = ab.Run(context.Background(), ab.Config{Dir: dir, BaseRev: "HEAD", Count: -1})
	assert.ErrorIs(t, err, ab.ErrConfig)
}

func TestRecord(t *testing.T) {
	dir := repo(t)
	var out bytes.Buffer
	err := ab.Record(context.Background(), ab.RecordConfig{Dir: dir, Count: 6, BenchTime: "1000x", Out: &out})
	require.NoError(t, err)
	text := out.String()
	for _, want := range []string{"cpu-physical-cores: ", "cpu-cache-line: ", "gomaxprocs: ", "go: go1.", "commit: ", "run: 5\n", "BenchmarkWork"} {
		assert.Contains(t, text, want)
	}
	// A baseline compared with itself passes.
	s, err := gate.Read(strings.NewReader(text), "baseline")
	require.NoError(t, err)
	rep, err := gate.Compare(s, s, *gateCfg())
	require.NoError(t, err)
	assert.False(t, rep.Regressed())
	assert.Error(t, ab.Record(context.Background(), ab.RecordConfig{Dir: dir}), "no Out")
}
