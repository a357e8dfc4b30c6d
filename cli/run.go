package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/reports"
	"github.com/sluicedev/sluice/scenarios"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

type runFlags struct {
	out       string
	driver    string
	seed      uint64
	duration  time.Duration
	policy    string
	progress  string
	target    string
	segment   string
	protocol  string
	transport string
	startAt   string
	record    string
}

func newRunCmd() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a scenario under every policy variant and check its thresholds",
		Long: `run replays the scenario's populations under each policy variant with the
same seed and traffic, then writes DIR/results.json, DIR/report.html and
.hgrm/.hlog files under DIR/hdr, prints a summary per variant and the
comparison, and checks the thresholds.

The default driver is the scenario's (sim: virtual time, deterministic and
fast; loopback: real sockets to the reference server on 127.0.0.1). Ctrl-C
stops the run cleanly: what was measured is written, marked incomplete;
a second Ctrl-C quits at once without it (exit 4 as well), removing the
results directory if the run made it and it is still empty.

DIR is checked before the first variant runs: a DIR that is a file, a
results.json or report.html that is a directory, or a DIR/hdr holding
files sluice did not write (it replaces DIR/hdr on each run) stops the
run at once. Each file is written whole or not at all, and DIR/hdr is put
in place whole; the temporary files of a write cut short (.NAME.tmp-N)
are sluice's own, removed by the next run into DIR. If the write still fails after the run, the summary is
printed before the error.

--target HOST:PORT drives a server sluice did not start (sluice serve in
another process, or any server speaking the reference protocol) over
sockets instead of starting one. sluice cannot set that server's policy
nor read its counters: the run has one variant, named with --policy when
the scenario has several, whose thresholds apply and which the results
record as the policy the server is assumed to run (start it with the same,
e.g. sluice serve --scenario FILE --variant NAME). Outcomes are what the
clients saw (replies, rejections, disconnects); what became of inputs,
which get no reply, is unknown, and the thresholds that need it are
listed as not measured. Against a loopback target each address group
dials from its own 127.x.y.z; against another host every client comes
from this host's address, so that server's per-address limits see one
address.

--segment I/N runs one of N deterministic shares of every population
(client i when i mod N is I, each with its own seed as in the whole run),
for a run split over N load generators; --start-at TIME (RFC 3339) makes
each wait for the same instant so that their time series line up. A
segment's thresholds are over its share: it exits 0 unless it could not
run; 'sluice merge' judges the whole.

Exit codes: 0 every threshold held, 3 a threshold failed (or a variant
expected to fail passed, or the measurements are invalid: the load
generator fell behind its schedule, a worker stopped at its action cap, or
latencies fell outside the histograms), 4 interrupted, 1 error, 2 usage.`,
		Example: `  sluice run scenarios/quickstart.yaml
  sluice run --driver loopback --policy balanced --duration 60s scenarios/quickstart.yaml
  sluice run --seed 7 --progress none -o /tmp/qs scenarios/quickstart.yaml
  sluice run --target 127.0.0.1:7777 --policy balanced scenarios/quickstart.yaml
  sluice run --segment 0/3 --start-at 2026-12-01T12:00:00Z -o seg0 scenarios/quickstart.yaml
  sluice run --policy balanced --record traces scenarios/quickstart.yaml`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error { return runScenario(c, a[0], f) },
	}
	fl := c.Flags()
	fl.StringVarP(&f.out, "output", "o", "", "directory for results (default results/<scenario name>)")
	fl.StringVar(&f.driver, "driver", "", "sim or loopback (default: the scenario's)")
	fl.Var(seedValue{&f.seed}, "seed", "seed for every client generator, an integer from 0 to 2^64-1 (default: the scenario's)")
	fl.DurationVar(&f.duration, "duration", 0, "run length, more than 0; warmup, population windows and ramps scale with it, and a length at which the scenario's file would be refused is refused (default: the scenario's)")
	fl.StringVar(&f.policy, "policy", "", "run only this policy variant")
	fl.StringVar(&f.progress, "progress", "auto", "auto (a bar on a terminal, lines otherwise), bar, lines or none")
	fl.StringVar(&f.target, "target", "", "HOST:PORT of a server sluice did not start, driven over sockets (default: the scenario's target, else the reference server in-process)")
	fl.StringVar(&f.transport, "transport", "", "what every client speaks the protocol over: tcp, ws (WebSocket) or udp, overriding the scenario's and every population's own transport; default theirs, else tcp")
	fl.StringVar(&f.protocol, "protocol", "", "with --target: the registered protocol the clients speak (default: sluice's reference protocol)")
	fl.StringVar(&f.segment, "segment", "", "I/N: run only segment I (from 0) of N of every population, for a run split over N generators (merge them with sluice merge)")
	fl.StringVar(&f.startAt, "start-at", "", "wait until this wall-clock time (RFC 3339) before the first variant, so that segments start together")
	fl.StringVar(&f.record, "record", "", "directory for a trace of what the server saw in each variant, VARIANT.trace (sim only; see sluice trace)")
	return c
}

// parseSegment reads --segment I/N.
func parseSegment(s string) (behave.Segment, error) {
	i, n, ok := strings.Cut(s, "/")
	a, err1 := strconv.Atoi(i)
	b, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || b < 1 || a < 0 || a >= b {
		return behave.Segment{}, usageError{fmt.Errorf("--segment %s: not I/N with 0 ≤ I < N, such as 0/3", s)}
	}
	return behave.Segment{Index: a, Of: b}, nil
}

func runScenario(c *cobra.Command, file string, f runFlags) error {
	opt := scenarios.Options{Driver: f.driver, Duration: f.duration, Policy: f.policy, Target: f.target, Protocol: f.protocol, Transport: f.transport, SluiceVersion: sluiceVersion(), Record: f.record}
	if c.Flags().Changed("seed") {
		opt.Seed = &f.seed
	}
	if c.Flags().Changed("policy") && f.policy == "" {
		return usageError{errors.New("--policy: empty: name a policy variant, or leave the flag out to run every variant")}
	}
	if c.Flags().Changed("segment") {
		sg, err := parseSegment(f.segment)
		if err != nil {
			return err
		}
		opt.Segment = sg
	}
	if f.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, f.startAt)
		if err != nil {
			return usageError{fmt.Errorf("--start-at %s: not an RFC 3339 time such as 2026-12-01T12:00:00Z", f.startAt)}
		}
		opt.StartAt = t
	}
	// The flags first: a bad flag is a usage error (exit 2) whatever the
	// file holds. --policy needs the scenario's variants; Run checks it.
	if err := opt.Validate(); err != nil {
		return optionUsage(err)
	}
	if err := checkDurationFlag(c.Flags().Changed("duration"), f.duration); err != nil {
		return err
	}
	prog, err := newProgress(f.progress, c.ErrOrStderr())
	if err != nil {
		return usageError{err}
	}
	opt.Progress = prog.update
	s, err := scenarios.Load(file)
	if err != nil {
		return err
	}
	if f.out == "" {
		f.out = filepath.Join("results", safeName(s.Name))
	}
	// Find out before the first variant, not after a long run, that the
	// results cannot be written: Run calls Ready once the scenario and the
	// options are checked (the directory is made last, so a refused run
	// leaves none behind).
	opt.Ready = func() error { return checkOutput(f.out) }

	// The directories a run makes for its results (Ready makes them),
	// from the highest: a second Ctrl-C removes those it leaves empty.
	made := missingDirs(f.out)

	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first Ctrl-C stops the run; writing what it measured can take
	// a while, so it is answered at once, and a second Ctrl-C quits
	// without waiting, with the interrupted exit code, removing the
	// results directory if the run made it and nothing is in it yet.
	// A Ctrl-C that comes once the run has ended, while its results are
	// written, stops nothing: those results are whole, and it says so.
	// The watcher is done before runScenario returns, and before the
	// deferred stop cancels ctx itself: otherwise it could take that for
	// a Ctrl-C and write after the caller has moved on. (A caller that
	// cancels c.Context() is answered as a Ctrl-C would be.)
	ran, watched := make(chan struct{}), make(chan struct{})
	defer func() { close(ran); <-watched }()
	var ended atomic.Bool
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
		case <-ran:
			return
		}
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(again)
		stop()
		prog.interrupted(ended.Load())
		select {
		case <-again:
			// Whatever is being written goes unfinished: the writer is
			// stopped after the file under way, and the temporary files
			// go, so that nothing half-written is left (each file
			// reaches its real name only whole).
			_ = reports.StopWrites(f.out)
			prog.quit(removeEmpty(made))
			quit(exitInterrupted)
		case <-ran:
		}
	}()
	out, runErr := scenarios.Run(ctx, s, opt)
	ended.Store(true)
	prog.finish()
	if out == nil {
		return optionUsage(runErr)
	}
	// The summary first: if the results cannot be written after all (the
	// disk filled, or the directory changed during the run), what was
	// measured is still shown.
	w := c.OutOrStdout()
	printSummary(w, out.Results)
	if err := reports.RenderFiles(f.out, out.Results); err != nil {
		fmt.Fprintf(w, "\nthe results above were not written to %s\n", f.out)
		return err
	}
	fmt.Fprintf(w, "\nwrote %s (open %s)\n", filepath.Join(f.out, reports.ResultsFile), filepath.Join(f.out, reports.ReportFile))
	switch {
	case !out.Results.Run.Complete && runErr != nil && !errors.Is(runErr, context.Canceled):
		fmt.Fprintln(w, "run stopped by an error: the results are partial and marked incomplete")
		return withCode(exitError, runErr)
	case !out.Results.Run.Complete:
		fmt.Fprintln(w, "run interrupted: the results are partial and marked incomplete")
		return withCode(exitInterrupted, nil)
	case opt.Segment.Of > 0:
		fmt.Fprintf(w, "segment %s: its thresholds are over its share of the run; merge every segment (sluice merge) to judge the whole\n", opt.Segment)
	case len(out.Invalid) > 0:
		fmt.Fprintf(w, "measurements invalid for %v (see each variant's invalid notes in the report)\n", out.Invalid)
		return withCode(exitThresholds, nil)
	case !out.Passed:
		for _, name := range out.Unexpected {
			if out.Expected[name] {
				fmt.Fprintf(w, "policy %s: thresholds failed\n", name)
			} else {
				fmt.Fprintf(w, "policy %s: expected to fail (a bad policy kept for comparison), but every threshold held\n", name)
			}
		}
		return withCode(exitThresholds, nil)
	}
	return nil
}

// optionUsage returns err as a usage error naming its flag if it is a
// *scenarios.OptionError (a bad --driver, --duration or --policy), and err
// itself otherwise.
func optionUsage(err error) error {
	var oe *scenarios.OptionError
	if errors.As(err, &oe) {
		return usageError{fmt.Errorf("--%s: %s", oe.Option, oe.Msg)}
	}
	return err
}

// checkOutput checks that the results can be written to dir: that the
// writer would not refuse it (reports.CheckDir), and that dir can be made
// and a file created in it.
func checkOutput(dir string) error {
	if err := reports.CheckDir(dir); err != nil {
		return fmt.Errorf("results directory (-o): %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".sluice-write-check-*")
	if err != nil {
		return fmt.Errorf("results directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// quit ends the process at a second Ctrl-C.
var quit = os.Exit

// missingDirs returns the directories that do not exist on the way to dir,
// dir's highest missing ancestor first and dir last; none if dir exists.
func missingDirs(dir string) []string {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append([]string{d}, missing...)
		if filepath.Dir(d) == d {
			break
		}
	}
	return missing
}

// removeEmpty removes the directories dirs (missingDirs' list) that are
// empty, the deepest first, and returns the highest it removed, or "".
func removeEmpty(dirs []string) string {
	removed := ""
	for i := len(dirs) - 1; i >= 0; i-- {
		if os.Remove(dirs[i]) != nil { // not empty (or not there)
			break
		}
		removed = dirs[i]
	}
	return removed
}

// safeName turns a scenario's name into a directory name under results/:
// only letters, digits, '-', '_' and '.', and never one that is all dots.
func safeName(s string) string {
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
	// "", "." and ".." would name results/ itself or its parent.
	if strings.Trim(name, ".") == "" {
		return "scenario"
	}
	return name
}

// progress shows how far the run is: a bar on a terminal, a plain line
// every few seconds otherwise.
type progress struct {
	mu      sync.Mutex
	mode    string
	w       io.Writer
	bar     *progressbar.ProgressBar
	current string
	last    time.Time
}

func newProgress(mode string, w io.Writer) (*progress, error) {
	if mode == "auto" {
		mode = "lines"
		if fd, ok := w.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(fd.Fd())) {
			mode = "bar"
		}
	}
	switch mode {
	case "bar", "lines", "none":
	default:
		return nil, fmt.Errorf("--progress %q: want auto, bar, lines or none", mode)
	}
	return &progress{mode: mode, w: w}, nil
}

func (p *progress) update(variant string, index, of int, done, total time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	label := fmt.Sprintf("variant %d/%d %s", index+1, of, variant)
	switch p.mode {
	case "bar":
		if p.current != label {
			if p.bar != nil {
				_ = p.bar.Finish()
				fmt.Fprintln(p.w)
			}
			p.bar = progressbar.NewOptions64(int64(total/time.Millisecond),
				progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(label),
				progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			p.current = label
		}
		_ = p.bar.Set64(int64(done / time.Millisecond))
	case "lines":
		if p.current != label || time.Since(p.last) >= 2*time.Second || done == total {
			fmt.Fprintf(p.w, "%s: %v of %v simulated/run time\n", label, done.Round(time.Millisecond), total)
			p.current, p.last = label, time.Now()
		}
	}
}

// interrupted says, on the progress writer, that the run is stopping, or,
// when the run had ended already, that its results are being written.
func (p *progress) interrupted(ended bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	if ended {
		fmt.Fprintln(p.w, "sluice: interrupted: the run had ended; writing its results (Ctrl-C again to quit at once)")
		return
	}
	fmt.Fprintln(p.w, "sluice: interrupted: stopping and writing the partial results (Ctrl-C again to quit at once)")
}

// quit says, on the progress writer, that a second Ctrl-C quits without
// the results, and which empty results directory it removed, if any.
func (p *progress) quit(removed string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	if removed != "" {
		fmt.Fprintf(p.w, "sluice: interrupted again: quitting without writing the results (removed the empty %s)\n", removed)
		return
	}
	fmt.Fprintln(p.w, "sluice: interrupted again: quitting without writing the results")
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
