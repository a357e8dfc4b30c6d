// Package ab compares the benchmarks of two commits on one machine, the
// noise-robust way: it builds the test binaries of a base revision (in a
// temporary git worktree, removed afterwards) and of the working tree, runs
// them interleaved, one sample per process, alternating which side goes
// first (A B, B A, A B, ...) so that drift in the machine's load falls on
// both sides alike, and hands the samples to package gate. Record writes a
// baseline file (the working tree's samples with the machine's facts) for
// comparisons without a base commit.
//
// The CLI wires it as `sluice bench ab --base REV [--count N] [--bench RE]`:
//
//	rep, err := ab.Run(ctx, ab.Config{BaseRev: rev, Count: n, Bench: re, Progress: os.Stderr})
//	// err wrapping gate.ErrTooFewSamples: rep is still set
//	rep.WriteText(os.Stdout)
//	if rep.Regressed() { exit 3 }
package ab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/cpuid/v2"
	"github.com/sluicedev/sluice/bench/gate"
)

// Defaults of Config and RecordConfig, used where a field is left at its
// zero value.
const (
	DefaultCount     = 10
	DefaultBench     = "."
	DefaultBenchTime = "20ms"
	DefaultPackage   = "./bench"
)

// ErrConfig is wrapped by the errors of unusable configs.
var ErrConfig = errors.New("ab: invalid config")

// Config configures Run. A zero field takes its documented default; only
// BaseRev is required. A Config is plain data.
type Config struct {
	// BaseRev is the git revision to compare against (required): a
	// commit, branch or tag of the repository that holds Dir.
	BaseRev string
	// Dir is a directory of the working tree's module; default ".".
	// Packages are relative to it, on both sides.
	Dir string
	// Packages are the packages whose benchmarks run; default
	// DefaultPackage ("./bench": the hot paths and their floors).
	Packages []string
	// Bench is the -test.bench regexp; default DefaultBench (all).
	Bench string
	// Full also runs the benchmarks that skip in -short mode (large
	// fixtures); by default the quick set runs (-test.short).
	Full bool
	// Count is the number of samples per side, each from its own process;
	// default DefaultCount.
	Count int
	// BenchTime is -test.benchtime for each sample; default
	// DefaultBenchTime.
	BenchTime string
	// BaseTags and CandTags are build tags of each side (for example
	// sluice_slow20 on the candidate, to measure the gate's power).
	BaseTags, CandTags []string
	// Gate configures the comparison; nil means gate.DefaultConfig().
	Gate *gate.Config
	// SaveDir, when set, receives base.txt and cand.txt: every sample of
	// each side in the Go benchmark format, for `sluice gate` or benchstat.
	SaveDir string
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
}

// Run builds both sides' test binaries, runs them Count times each,
// interleaved, and compares the samples with gate.Compare. It returns the
// report and gate.Compare's error (a report with too few samples comes
// back with an error wrapping gate.ErrTooFewSamples), or an error of its
// own when a build or a run fails, with the failing output.
func Run(ctx context.Context, cfg Config) (*gate.Report, error) {
	if cfg.BaseRev == "" {
		return nil, fmt.Errorf("%w: BaseRev is empty", ErrConfig)
	}
	r, err := newRunner(cfg.Dir, cfg.Packages, cfg.Bench, cfg.BenchTime, cfg.Full, cfg.Count, cfg.Progress)
	if err != nil {
		return nil, err
	}
	top, err := r.git(ctx, r.dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	sha, err := r.git(ctx, r.dir, "rev-parse", "--verify", "--quiet", cfg.BaseRev+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("ab: base revision %q: not a commit: %w", cfg.BaseRev, err)
	}
	// Dir's place in the repository, to find it in the base's worktree.
	rel, err := filepath.Rel(evalSymlinks(top), evalSymlinks(r.dir))
	if err != nil {
		return nil, fmt.Errorf("ab: %w", err)
	}
	tmp, err := os.MkdirTemp("", "sluice-ab-")
	if err != nil {
		return nil, fmt.Errorf("ab: %w", err)
	}
	defer os.RemoveAll(tmp)

	wt := filepath.Join(tmp, "base")
	r.progress("ab: checking out %s (%s) into a temporary worktree", cfg.BaseRev, short(sha))
	if _, err := r.git(ctx, top, "worktree", "add", "--detach", "--quiet", wt, sha); err != nil {
		return nil, err
	}
	defer func() {
		// A fresh context: the worktree goes even when ctx was cancelled.
		if _, err := r.git(context.Background(), top, "worktree", "remove", "--force", wt); err != nil {
			r.progress("ab: %v", err)
		}
	}()

	base, err := r.build(ctx, "base", filepath.Join(wt, rel), filepath.Join(tmp, "bin-base"), cfg.BaseTags)
	if err != nil {
		return nil, fmt.Errorf("ab: base %s: %w", short(sha), err)
	}
	cand, err := r.build(ctx, "cand", r.dir, filepath.Join(tmp, "bin-cand"), cfg.CandTags)
	if err != nil {
		return nil, fmt.Errorf("ab: working tree: %w", err)
	}

	facts := Facts()
	var bout, cout bytes.Buffer
	for _, w := range []*bytes.Buffer{&bout, &cout} {
		w.WriteString(facts)
	}
	fmt.Fprintf(&bout, "commit: %s\n", sha)
	fmt.Fprintf(&cout, "commit: working tree on %s\n", r.head(ctx))
	start := time.Now()
	for i := 0; i < r.count; i++ {
		sides := []struct {
			bins []binary
			out  *bytes.Buffer
		}{{base, &bout}, {cand, &cout}}
		if i%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, s := range sides {
			if err := r.sample(ctx, s.bins, i, s.out); err != nil {
				return nil, err
			}
		}
		r.progress("ab: sample %d/%d of each side (%s)", i+1, r.count, time.Since(start).Round(time.Second))
	}

	if cfg.SaveDir != "" {
		if err := os.MkdirAll(cfg.SaveDir, 0o755); err != nil {
			return nil, fmt.Errorf("ab: %w", err)
		}
		for name, b := range map[string]*bytes.Buffer{"base.txt": &bout, "cand.txt": &cout} {
			if err := os.WriteFile(filepath.Join(cfg.SaveDir, name), b.Bytes(), 0o644); err != nil {
				return nil, fmt.Errorf("ab: %w", err)
			}
		}
	}
	bs, err := gate.Read(&bout, "base "+short(sha))
	if err != nil {
		return nil, err
	}
	cs, err := gate.Read(&cout, "working tree")
	if err != nil {
		return nil, err
	}
	gc := gate.DefaultConfig()
	if cfg.Gate != nil {
		gc = *cfg.Gate
	}
	return gate.Compare(bs, cs, gc)
}

// RecordConfig configures Record; zero fields take the defaults of the
// same fields of Config.
type RecordConfig struct {
	Dir       string
	Packages  []string
	Bench     string
	Full      bool
	Count     int
	BenchTime string
	Tags      []string
	// Out receives the baseline (required).
	Out io.Writer
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
}

// Record builds the working tree's test binaries and runs them Count
// times, one sample per process, writing to Out a baseline in the Go
// benchmark format: a header of the machine's facts (Facts) and the
// commit, then the samples, each run's marked with a "run: N" line so that
// the gate divides each sample by its own run's floor. Commit it as
// bench/baseline/quick.txt for `sluice gate` runs without a base commit.
func Record(ctx context.Context, cfg RecordConfig) error {
	if cfg.Out == nil {
		return fmt.Errorf("%w: Out is nil", ErrConfig)
	}
	r, err := newRunner(cfg.Dir, cfg.Packages, cfg.Bench, cfg.BenchTime, cfg.Full, cfg.Count, cfg.Progress)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "sluice-baseline-")
	if err != nil {
		return fmt.Errorf("ab: %w", err)
	}
	defer os.RemoveAll(tmp)
	bins, err := r.build(ctx, "baseline", r.dir, tmp, cfg.Tags)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	out.WriteString(Facts())
	fmt.Fprintf(&out, "commit: %s\n", r.head(ctx))
	fmt.Fprintf(&out, "benchtime: %s\n", r.benchTime)
	for i := 0; i < r.count; i++ {
		if err := r.sample(ctx, bins, i, &out); err != nil {
			return err
		}
		r.progress("baseline: sample %d/%d", i+1, r.count)
	}
	_, err = cfg.Out.Write(out.Bytes())
	return err
}

// Facts returns the machine's facts as Go benchmark format configuration
// lines ("key: value"): the CPU's cores, threads and cache line (cpuid),
// GOMAXPROCS, the Go version, and the load average when /proc/loadavg
// exists. The test binaries add goos, goarch, pkg and cpu (the brand).
func Facts() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cpu-physical-cores: %d\n", cpuid.CPU.PhysicalCores)
	fmt.Fprintf(&b, "cpu-logical-cores: %d\n", cpuid.CPU.LogicalCores)
	fmt.Fprintf(&b, "cpu-cache-line: %d\n", cpuid.CPU.CacheLine)
	fmt.Fprintf(&b, "gomaxprocs: %d\n", runtime.GOMAXPROCS(0))
	fmt.Fprintf(&b, "go: %s\n", runtime.Version())
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(la)); len(f) >= 3 {
			fmt.Fprintf(&b, "load-average: %s %s %s\n", f[0], f[1], f[2])
		}
	}
	return b.String()
}

// runner holds what Run and Record share.
type runner struct {
	dir       string
	pkgs      []string
	bench     string
	benchTime string
	full      bool
	count     int
	out       io.Writer
}

// binary is one package's test binary and the directory it runs in.
type binary struct {
	path, dir string
}

func newRunner(dir string, pkgs []string, bench, benchTime string, full bool, count int, progress io.Writer) (*runner, error) {
	r := &runner{dir: dir, pkgs: pkgs, bench: bench, benchTime: benchTime, full: full, count: count, out: progress}
	if r.dir == "" {
		r.dir = "."
	}
	abs, err := filepath.Abs(r.dir)
	if err != nil {
		return nil, fmt.Errorf("ab: %w", err)
	}
	r.dir = abs
	if len(r.pkgs) == 0 {
		r.pkgs = []string{DefaultPackage}
	}
	if r.bench == "" {
		r.bench = DefaultBench
	}
	if r.benchTime == "" {
		r.benchTime = DefaultBenchTime
	}
	if r.count == 0 {
		r.count = DefaultCount
	}
	if r.count < 0 {
		return nil, fmt.Errorf("%w: Count = %d: want at least 1", ErrConfig, r.count)
	}
	if r.out == nil {
		r.out = io.Discard
	}
	return r, nil
}

func (r *runner) progress(format string, a ...any) { fmt.Fprintf(r.out, format+"\n", a...) }

// git runs git in dir and returns its trimmed stdout.
func (r *runner) git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("ab: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// head describes the working tree's commit, "+dirty" when it has changes.
func (r *runner) head(ctx context.Context) string {
	sha, err := r.git(ctx, r.dir, "rev-parse", "HEAD")
	if err != nil {
		return "unknown"
	}
	if st, err := r.git(ctx, r.dir, "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
		return sha + "+dirty"
	}
	return sha
}

// build compiles the test binary of every package in root into binDir.
func (r *runner) build(ctx context.Context, side, root, binDir string, tags []string) ([]binary, error) {
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, fmt.Errorf("ab: %w", err)
	}
	var bins []binary
	for i, pkg := range r.pkgs {
		r.progress("ab: building %s test binary of %s", side, pkg)
		dir, err := r.goCmd(ctx, root, "list", "-f", "{{.Dir}}", pkg)
		if err != nil {
			return nil, err
		}
		bin := filepath.Join(binDir, fmt.Sprintf("pkg%d.test", i))
		args := []string{"test", "-c", "-o", bin}
		if len(tags) > 0 {
			args = append(args, "-tags", strings.Join(tags, ","))
		}
		if _, err := r.goCmd(ctx, root, append(args, pkg)...); err != nil {
			return nil, err
		}
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("ab: %s has no test files", pkg)
		}
		bins = append(bins, binary{path: bin, dir: dir})
	}
	return bins, nil
}

func (r *runner) goCmd(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, tail(out))
	}
	return strings.TrimSpace(string(out)), nil
}

// sample runs every binary once, appending its output after a "run: i"
// line.
func (r *runner) sample(ctx context.Context, bins []binary, i int, out *bytes.Buffer) error {
	args := []string{"-test.run", "^$", "-test.bench", r.bench, "-test.benchtime", r.benchTime,
		"-test.count", "1", "-test.benchmem"}
	if !r.full {
		args = append(args, "-test.short")
	}
	for _, b := range bins {
		cmd := exec.CommandContext(ctx, b.path, args...)
		cmd.Dir = b.dir
		res, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("ab: %s: %w\n%s", strings.Join(cmd.Args, " "), err, tail(res))
		}
		fmt.Fprintf(out, "%s: %d\n", gate.RunKey, i)
		out.Write(res)
	}
	return nil
}

func tail(b []byte) string {
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func evalSymlinks(p string) string {
	if q, err := filepath.EvalSymlinks(p); err == nil {
		return q
	}
	return p
}
