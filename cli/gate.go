package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sluicedev/sluice/bench/ab"
	"github.com/sluicedev/sluice/bench/gate"
	"github.com/spf13/cobra"
)

// gateFlags are the comparison settings shared by `gate` and `bench ab`.
type gateFlags struct {
	config    string
	alpha     float64
	minEffect string
	asJSON    bool
}

func (g *gateFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&g.config, "config", "", "gate config file (per-benchmark effect sizes, floors; see bench/gate/default.yaml)")
	c.Flags().Float64Var(&g.alpha, "alpha", 0, "significance level of the Mann-Whitney U test (default: the config's, 0.05)")
	c.Flags().StringVar(&g.minEffect, "min-effect", "", "smallest slowdown that counts, e.g. 5% (default: the config's)")
	c.Flags().BoolVar(&g.asJSON, "json", false, "print the report as JSON")
}

func (g *gateFlags) resolve() (gate.Config, error) {
	cfg := gate.DefaultConfig()
	if g.config != "" {
		var err error
		if cfg, err = gate.LoadConfig(g.config); err != nil {
			return cfg, err
		}
	}
	if g.alpha != 0 {
		cfg.Alpha = g.alpha
	}
	if g.minEffect != "" {
		f, err := gate.ParseFraction(g.minEffect)
		if err != nil {
			return cfg, usageError{fmt.Errorf("--min-effect: %w", err)}
		}
		if f == 0 {
			f = -1 // none: a zero MinEffect would mean the default
		}
		cfg.MinEffect = f
	}
	return cfg, cfg.Validate()
}

// finish prints a gate report and turns it into the exit code.
func (g *gateFlags) finish(c *cobra.Command, rep *gate.Report, err error) error {
	if rep != nil {
		out := c.OutOrStdout()
		var werr error
		if g.asJSON {
			werr = rep.WriteJSON(out)
		} else {
			werr = rep.WriteText(out)
		}
		if werr != nil {
			return werr
		}
	}
	if err != nil {
		// Too few samples is an error, not a pass. The text report has
		// said so already, once per comparison and with the rule: the
		// exit code is all that is left to give.
		if rep != nil && !g.asJSON && onlySampleErrors(err) {
			return withCode(exitError, nil)
		}
		return err
	}
	if rep.Regressed() {
		return withCode(exitThresholds, errors.New("benchmark regression"))
	}
	return nil
}

// onlySampleErrors reports whether err is made only of *gate.SampleError
// values (Compare joins one per comparison).
func onlySampleErrors(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlySampleErrors(e) {
				return false
			}
		}
		return true
	}
	var se *gate.SampleError
	return errors.As(err, &se)
}

func newGateCmd() *cobra.Command {
	var g gateFlags
	var base, cand []string
	c := &cobra.Command{
		Use:   "gate BASE.txt CAND.txt",
		Short: "Fail on a real benchmark regression between two `go test -bench` outputs",
		Long: `gate compares the benchmarks of a candidate against a base (each one or more
'go test -bench' output files) and fails only on a regression that is
statistically significant (Mann-Whitney U on medians), in the bad direction
and larger than the minimum effect. Times are compared as ratios to floors
measured in the same run (a bare CAS, a map lookup, a clock read), so a
slower machine is not a regression.

Samples: ` + gate.SampleRule(gate.DefaultMinSamples) + `.
Too few samples is an error, never a pass; samples too short to time are
warned of.

Use --base and --cand for several files per side; with two arguments the
first is the base and the second the candidate.

Exit codes: 0 no regression, 3 regression, 1 error (too few samples,
including a benchmark the candidate no longer runs, or nothing compared
at all; unreadable files), 2 usage.`,
		Args: args(cobra.RangeArgs(0, 2)),
		RunE: func(c *cobra.Command, a []string) error {
			if len(a) == 2 {
				base, cand = append(base, a[0]), append(cand, a[1])
			} else if len(a) != 0 {
				return usageError{errors.New("give BASE and CAND, or --base and --cand")}
			}
			if len(base) == 0 || len(cand) == 0 {
				return usageError{errors.New("need a base and a candidate file")}
			}
			cfg, err := g.resolve()
			if err != nil {
				return err
			}
			rep, err := gate.CompareFiles(base, cand, cfg)
			return g.finish(c, rep, err)
		},
	}
	g.add(c)
	c.Flags().StringSliceVar(&base, "base", nil, "base benchmark output file (repeatable)")
	c.Flags().StringSliceVar(&cand, "cand", nil, "candidate benchmark output file (repeatable)")
	return c
}

func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark commands: ab (interleaved A/B of two commits), baseline",
		// Without a subcommand, or with one it does not know: a usage
		// error (exit 2), not cobra's help with exit 0.
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			return usageError{errors.New("a subcommand is required: ab or baseline")}
		},
	}
	c.AddCommand(newBenchABCmd(), newBenchBaselineCmd())
	return c
}

func newBenchABCmd() *cobra.Command {
	var g gateFlags
	var cfg ab.Config
	var pkgs, baseTags, candTags string
	c := &cobra.Command{
		Use:   "ab --base REV",
		Short: "Build REV and the working tree, run their benchmarks interleaved, and gate",
		Long: `ab builds the benchmark binaries of a base revision (in a temporary git
worktree) and of the working tree, runs them alternately (A B A B ...), one
sample per process, and gates the candidate against the base: the
noise-robust way to compare two commits on one machine. See bench/README.md.

Exit codes: 0 no regression, 3 regression, 1 error, 2 usage, 4 interrupted
(the temporary worktree is removed).`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if cfg.BaseRev == "" {
				return usageError{errors.New("--base REV is required")}
			}
			gc, err := g.resolve()
			if err != nil {
				return err
			}
			cfg.Gate = &gc
			cfg.Packages = splitList(pkgs)
			cfg.BaseTags, cfg.CandTags = splitList(baseTags), splitList(candTags)
			cfg.Progress = c.ErrOrStderr()
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, err := ab.Run(ctx, cfg)
			if err != nil && ctx.Err() != nil {
				return withCode(exitInterrupted, err) // Ctrl-C: the worktree is removed
			}
			return g.finish(c, rep, err)
		},
	}
	g.add(c)
	fl := c.Flags()
	fl.StringVar(&cfg.BaseRev, "base", "", "git revision to compare against (required)")
	fl.IntVar(&cfg.Count, "count", 0, "samples per side (default 10)")
	fl.StringVar(&cfg.Bench, "bench", "", "benchmark regexp (default: all in the packages)")
	fl.StringVar(&cfg.BenchTime, "benchtime", "", "benchtime per sample (default 20ms)")
	fl.StringVar(&pkgs, "packages", "", "comma-separated packages (default ./bench)")
	fl.BoolVar(&cfg.Full, "full", false, "also run the large benchmarks skipped in the quick set")
	fl.StringVar(&cfg.SaveDir, "save", "", "directory to keep base.txt and cand.txt")
	fl.StringVar(&baseTags, "base-tags", "", "build tags of the base side")
	fl.StringVar(&candTags, "cand-tags", "", "build tags of the candidate side (e.g. sluice_slow20)")
	return c
}

func newBenchBaselineCmd() *cobra.Command {
	var cfg ab.RecordConfig
	var out, pkgs string
	c := &cobra.Command{
		Use:   "baseline -o FILE",
		Short: "Record a benchmark baseline of the working tree (with the machine's facts)",
		Long: `baseline runs the working tree's benchmarks Count times, one process per
sample, and writes them with the machine's facts: commit the file as
bench/baseline/quick.txt to refresh the baseline the CI gate uses when no
base commit is available. The file is written only when every sample ran.

Exit codes: 0 written, 1 error, 2 usage, 4 interrupted (nothing written).`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if out == "" {
				return usageError{errors.New("-o FILE is required")}
			}
			f, err := os.CreateTemp(filepath.Dir(out), ".baseline-*")
			if err != nil {
				return err
			}
			defer os.Remove(f.Name())
			cfg.Out, cfg.Progress, cfg.Packages = f, c.ErrOrStderr(), splitList(pkgs)
			// Ctrl-C cancels the run, so that the deferred removals of the
			// temporary file and of the test binaries happen.
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := ab.Record(ctx, cfg); err != nil {
				f.Close()
				if ctx.Err() != nil {
					return withCode(exitInterrupted, err)
				}
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			return os.Rename(f.Name(), out)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&out, "output", "o", "", "file to write")
	fl.IntVar(&cfg.Count, "count", 0, "samples (default 10)")
	fl.StringVar(&cfg.Bench, "bench", "", "benchmark regexp (default: all)")
	fl.StringVar(&cfg.BenchTime, "benchtime", "", "benchtime per sample (default 20ms)")
	fl.StringVar(&pkgs, "packages", "", "comma-separated packages (default ./bench)")
	fl.BoolVar(&cfg.Full, "full", false, "also run the large benchmarks")
	return c
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
