package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/proto"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/reports"
	"github.com/sluicedev/sluice/trace"
)

// MaxSendLagP99 is the largest 99th percentile of send lag (how late the
// load generator carried out its actions) for which a run is valid.
const MaxSendLagP99 = 20 * time.Millisecond

// Options override a scenario's own settings for one run.
type Options struct {
	// Driver replaces the scenario's driver when not empty.
	Driver string
	// Seed replaces the scenario's seed when not nil.
	Seed *uint64
	// Duration replaces the scenario's duration when positive; the warmup
	// and every population's window are scaled with it.
	Duration time.Duration
	// Policy runs only the variant with this name when not empty.
	Policy string
	// Target, HOST:PORT, replaces the scenario's target when not empty: a
	// server sluice does not start (sluice serve in another process, or a
	// studio's own server), driven over sockets (driver loopback). sluice
	// can neither set its policy nor read its counters, so the run has one
	// variant, the one Policy names (needed when the scenario has more):
	// its thresholds apply, and the results record it as the policy the
	// server is assumed to run. Outcomes are what the clients saw; the
	// thresholds that need the server's own counts are not evaluated
	// (reports.Variant.NotApplicable).
	Target string
	// Protocol names the registered protocol (loadgen/proto) the clients
	// speak to a Target; empty is the reference protocol. Only a target
	// can speak another: the in-process server and the sim speak the
	// reference protocol.
	Protocol string
	// Transport, when not empty, replaces the scenario's transport and
	// every population's own: tcp, ws (WebSocket) or udp.
	Transport string
	// Segment, when its Of is more than 1, runs only that share of every
	// population (see behave.Segment): one of several load generators
	// that together run the whole scenario. Its results are merged with
	// MergeSegments; its own thresholds are over its share only.
	Segment behave.Segment
	// StartAt, when not zero, is the wall-clock time Run waits for before
	// the first variant, so that segments on several machines start
	// together and their time series line up.
	StartAt time.Time
	// SluiceVersion is recorded in the results' environment.
	SluiceVersion string
	// Progress, if set, is called as each variant runs: its index, the
	// number of variants, and the variant's time done and total.
	Progress func(variant string, index, of int, done, total time.Duration)
	// Ready, if set, is called once the scenario and the options are
	// checked (what Check checks), before the first variant runs; an
	// error from it stops Run, which returns it. sluice run checks there
	// that it can write its results: a run refused for its scenario or its
	// flags leaves no directory behind, and a run that cannot write its
	// results does not run.
	Ready func() error
	// Record, when not empty, is a folder (made if missing) that receives
	// a trace of what the server saw in each variant, VARIANT.trace (see
	// package trace). Sim only.
	Record string
}

// Validate reports the first option that no scenario could accept, as an
// *OptionError: a driver other than sim or loopback, a negative duration.
// Run checks them too (and Policy, which needs the scenario's variants);
// a command line checks them first, so that a bad flag is named before
// the scenario file is read.
func (o Options) Validate() error {
	if o.Record != "" && o.Driver == DriverLoopback {
		return &OptionError{Option: "record", Msg: "records what the sim's server saw: use the sim driver (sluice serve --record records a running server)"}
	}
	if o.Driver != "" && !validDriver(o.Driver) {
		return &OptionError{Option: "driver", Msg: notADriver(o.Driver)}
	}
	if o.Duration < 0 {
		return &OptionError{Option: "duration", Msg: fmt.Sprintf("%v is negative", o.Duration)}
	}
	if o.Duration > behave.MaxDuration {
		return &OptionError{Option: "duration", Msg: fmt.Sprintf("%v is longer than the longest run, %v", o.Duration, behave.MaxDuration)}
	}
	if o.Protocol != "" {
		if _, err := proto.Lookup(o.Protocol); err != nil {
			return &OptionError{Option: "protocol", Msg: err.Error(), err: err}
		}
	}
	if err := drive.CheckTransport(o.Transport); err != nil {
		return &OptionError{Option: "transport", Msg: err.Error()}
	}
	if sg := o.Segment; sg.Of < 0 || !sg.Whole() && (sg.Index < 0 || sg.Index >= sg.Of) {
		return &OptionError{Option: "segment", Msg: fmt.Sprintf("%d/%d is not I/N with 0 ≤ I < N", sg.Index, sg.Of)}
	}
	if o.Target != "" {
		if err := checkTarget(o.Target); err != nil {
			return &OptionError{Option: "target", Msg: err.Error()}
		}
		if o.Driver != "" && o.Driver != DriverLoopback {
			return &OptionError{Option: "driver", Msg: fmt.Sprintf("%s cannot drive a target: a target is driven over sockets (loopback)", o.Driver)}
		}
	}
	return nil
}

// Outcome is what Run returns: the results, and whether every variant met
// its expectation.
type Outcome struct {
	Results *reports.Results
	// Passed is true when every variant expected to pass held all its
	// thresholds and every variant expected to fail failed at least one.
	Passed bool
	// Expected maps each variant's name to whether it was expected to pass.
	Expected map[string]bool
	// Unexpected lists the variants whose outcome was not the expected one.
	Unexpected []string
	// Invalid lists the variants whose measurements cannot be trusted (see
	// reports.Variant.Invalid); a run with any is not Passed.
	Invalid []string
}

// Run runs every policy variant of the scenario on the same seed and
// traffic, one after the other, and returns the results with thresholds
// evaluated. When ctx is cancelled it stops the variant in progress and
// returns what was measured so far, marked incomplete (Run.Complete false),
// together with ctx's error.
func Run(ctx context.Context, s *Scenario, opt Options) (*Outcome, error) {
	eff, variants, plan, err := s.prepare(opt)
	if err != nil {
		return nil, err
	}
	if opt.Ready != nil {
		if err := opt.Ready(); err != nil {
			return nil, err
		}
	}
	res := reports.New(reports.Run{
		Scenario:       eff.Name,
		Description:    eff.Description,
		ScenarioSHA256: eff.SHA256,
		Seed:           eff.Seed,
		Driver:         eff.Driver,
		Duration:       eff.Duration,
		Warmup:         eff.Warmup,
		Interval:       eff.Interval,
		Started:        time.Now().UTC(),
		Target:         eff.Target,
		Transport:      transportName(eff.Transport),
		Segment:        opt.Segment.String(),
		StartAt:        opt.StartAt,
		Thresholds:     eff.Thresholds,
	}, reports.CaptureEnvironment(opt.SluiceVersion))
	var remote *loadgen.Remote
	if eff.Target != "" {
		addr, err := resolveTarget(ctx, eff.Target)
		if err != nil {
			return nil, &OptionError{Option: "target", Msg: err.Error(), err: err}
		}
		remote = &loadgen.Remote{Addr: addr, AnyAddress: true}
	}
	protocol, err := proto.Lookup(opt.Protocol)
	if err != nil {
		return nil, &OptionError{Option: "protocol", Msg: err.Error(), err: err}
	}
	expected := map[string]bool{}
	for _, v := range variants {
		expected[v.Name] = !v.ExpectFail
		res.Run.PlannedVariants = append(res.Run.PlannedVariants, v.Name)
	}
	if !opt.StartAt.IsZero() {
		select {
		case <-time.After(time.Until(opt.StartAt)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		res.Run.Started = time.Now().UTC()
	}
	complete := true
	var runErr error
	for i, v := range variants {
		spec := loadgen.RunSpec{Plan: plan, Warmup: eff.Warmup, Interval: eff.Interval, Remote: remote, Protocol: protocol, Transport: eff.Transport, Network: eff.Network}
		spec.Servers, spec.Redis = fleetRun(eff, v)
		if opt.Progress != nil {
			name, idx, of := v.Name, i, len(variants)
			spec.Progress = func(done, total time.Duration) { opt.Progress(name, idx, of, done, total) }
		}
		var r *loadgen.Result
		var recFile *os.File
		if opt.Record != "" {
			w, f, err := recordFile(opt.Record, eff, v)
			if err != nil {
				return nil, err
			}
			spec.Record, recFile = w, f
		}
		if eff.Driver == DriverLoopback {
			r, runErr = loadgen.RunLoopback(ctx, spec, v.Policy)
		} else {
			r, runErr = loadgen.RunSim(ctx, spec, v.Policy)
		}
		if recFile != nil {
			if err := recFile.Close(); err != nil && runErr == nil {
				runErr = fmt.Errorf("scenarios: record: %w", err)
			}
		}
		if r == nil {
			// Refused before it ran (prepare checked what it could; a
			// server that cannot start is left): no results of its own.
			if runErr == nil {
				runErr = errors.New("no result")
			}
			runErr = fmt.Errorf("scenarios: variant %q: %w", v.Name, runErr)
			if len(res.Variants) == 0 {
				return nil, runErr
			}
			complete = false
			break
		}
		rv, err := res.AddVariant(v.Name, policySummary(v.Policy))
		if err != nil {
			return nil, err
		}
		rv.Description, rv.Expect = v.Description, reports.ExpectPass
		if v.ExpectFail {
			rv.Expect = reports.ExpectFail
		}
		if err := fill(rv, eff, r); err != nil {
			return nil, fmt.Errorf("scenarios: variant %q: %w", v.Name, err)
		}
		rv.Invalid = append(rv.Invalid, recorderInvalid(r.Recorder)...)
		// A run cut short counts what ran, but its per-second rates are
		// over the whole measured window: say so rather than report them
		// as if it had run to the end.
		if n := r.Recorder.Stats.Stopped; n > 0 {
			rv.Invalid = append(rv.Invalid, fmt.Sprintf("%d worker(s) stopped at the action cap before the end: rates per second understate the traffic", n))
		}
		if !r.Complete {
			// Its rates are over what it measured (Variant.Stopped).
			rv.Stopped = max(r.Ran, 1)
			rv.Invalid = append(rv.Invalid, fmt.Sprintf("the run stopped %v into its %v (interrupted, or a time bound): its counts cover only that", r.Ran.Round(time.Millisecond), eff.Duration))
			complete = false
			break
		}
		if runErr != nil {
			break
		}
	}
	res.Run.Finished = time.Now().UTC()
	res.Run.Complete = complete && runErr == nil
	if err := res.Finalize(); err != nil {
		return nil, err
	}
	out := eff.judge(res, expected)
	if !res.Run.Complete {
		out.Passed = false
		if runErr == nil {
			runErr = ctx.Err()
		}
		if runErr == nil { // nobody cancelled it: a run hit its own time bound
			runErr = errors.New("scenarios: a variant's run did not complete within its time bound (duration + reply timeout + 30s)")
		}
	}
	return out, runErr
}

// withOptions returns a copy of s with the options applied.
func (s *Scenario) withOptions(opt Options) (*Scenario, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	c := *s
	c.Population = append([]Population(nil), s.Population...)
	if opt.Driver != "" {
		c.Driver = opt.Driver
	}
	if opt.Target != "" {
		c.Target, c.Driver = opt.Target, DriverLoopback
	}
	if opt.Transport != "" {
		// The flag is every population's transport: it overrides theirs.
		c.Transport = opt.Transport
		for i := range c.Population {
			c.Population[i].Transport = ""
		}
	}
	if c.Target != "" {
		if err := c.oneTransport(); err != nil {
			return nil, err
		}
	}
	if opt.Protocol != "" && opt.Protocol != proto.ReferenceName && c.Target == "" {
		return nil, &OptionError{Option: "protocol", Msg: fmt.Sprintf("%s is spoken only to a target (--target, or target: in the scenario): the in-process server and the sim speak the reference protocol", opt.Protocol)}
	}
	if c.Target != "" && c.Driver != DriverLoopback {
		return nil, &OptionError{Option: "driver", Msg: fmt.Sprintf("%s cannot drive the scenario's target %s: a target is driven over sockets (loopback)", c.Driver, c.Target)}
	}
	if !opt.Segment.Whole() {
		for _, p := range c.Population {
			if p.Behaviour == traceBehaviour {
				return nil, &OptionError{Option: "segment", Msg: fmt.Sprintf("population %q replays a trace, whose sessions a segment does not split: run the scenario whole", p.Name)}
			}
		}
	}
	if c.Driver == DriverLoopback && opt.Record != "" {
		return nil, &OptionError{Option: "record", Msg: "records what the sim's server saw: use the sim driver (sluice serve --record records a running server)"}
	}
	if opt.Seed != nil {
		c.Seed = *opt.Seed
	}
	if opt.Duration > 0 && opt.Duration != s.Duration {
		// Held to the file's own rules at that length: what the file
		// would refuse, the option may not make.
		if err := s.checkDuration(opt.Duration); err != nil {
			return nil, &OptionError{Option: "duration", Msg: err.Error(), err: err}
		}
		c.scaleTo(opt.Duration)
	}
	return &c, nil
}

// scaleTo sets s's duration to d and scales its warmup, population windows
// and ramps with it, cutting its interval to d: the scenario as Options
// .Duration runs it. s's Population must be its own copy.
func (s *Scenario) scaleTo(d time.Duration) {
	scale := func(x time.Duration) time.Duration {
		return time.Duration(float64(x) * float64(d) / float64(s.Duration))
	}
	s.Warmup = scale(s.Warmup)
	for i := range s.Population {
		p := &s.Population[i]
		p.Start, p.Stop = scale(p.Start), scale(p.Stop)
		p.Arrival.Over = scale(p.Arrival.Over)
	}
	s.Duration = d
	s.Interval = min(s.Interval, d)
}

// plan expands the populations into a loadgen plan.
func (s *Scenario) plan() behave.Plan {
	p := behave.Plan{Seed: s.Seed, Duration: s.Duration}
	for _, pop := range s.Population {
		p.Populations = append(p.Populations, behave.Population{
			Name:       pop.Name,
			Clients:    pop.Count,
			Behaviour:  pop.behaviour,
			PerAddress: pop.PerAddress,
			PerAccount: pop.PerAccount,
			Arrival:    behave.Arrival{Kind: pop.Arrival.Kind, Over: pop.Arrival.Over, Rate: pop.Arrival.Rate},
			Start:      pop.Start,
			Stop:       pop.Stop,
			Hostile:    *pop.Hostile,
			Transport:  pop.Transport,
		})
		p.Populations[len(p.Populations)-1].SameAddressAs = pop.SameAddressAs
	}
	return p
}

// policySummary is the part of a policy a report shows: every channel's
// rate and burst and the aggregate budgets, with defaults filled in.
func policySummary(pol core.Policy) json.RawMessage {
	p := pol.Normalized()
	type limit struct {
		Rate  float64 `json:"rate"`
		Burst float64 `json:"burst"`
	}
	lim := func(rate, burst *float64) *limit {
		if rate == nil || burst == nil {
			return nil
		}
		return &limit{*rate, *burst}
	}
	sum := map[string]any{}
	chans := map[string]any{}
	for _, c := range p.Channels {
		chans[c.Name] = map[string]any{"class": c.Class.String(), "limit": lim(c.Rate, c.Burst)}
	}
	sum["channels"] = chans
	sum["bytes"] = lim(p.Transport.Bytes.Rate, p.Transport.Bytes.Burst)
	sum["frames"] = lim(p.Transport.Frames.Rate, p.Transport.Frames.Burst)
	for name, b := range map[string]core.Budget{"account": p.Account, "address": p.Address, "match": p.Match} {
		if b.Disabled {
			sum[name] = "off"
		} else {
			sum[name] = lim(b.Rate, b.Burst)
		}
	}
	sum["shadow"] = p.Shadow
	data, _ := json.Marshal(sum)
	return data
}

// Check reports what would make Run refuse the scenario under opt before
// running anything: a bad option (an *OptionError) or variant, and the
// load generator's own bounds for every variant (loadgen.CheckRun), each
// error naming its variant. It returns the policy variants Run would run.
// sluice validate calls it.
func (s *Scenario) Check(opt Options) ([]NamedPolicy, error) {
	_, variants, _, err := s.prepare(opt)
	return variants, err
}

// ErrOption is wrapped by every *OptionError: the caller's input, not the
// scenario's, is at fault.
var ErrOption = errors.New("scenarios: bad option")

// OptionError names the Options field that cannot be used (in lower case,
// as sluice run's flag: driver, duration, policy) and why. It wraps
// ErrOption, and ErrNoVariant for a policy the scenario does not define.
type OptionError struct {
	Option, Msg string
	err         error
}

func (e *OptionError) Error() string { return "scenarios: option " + e.Option + ": " + e.Msg }

// Unwrap returns ErrOption, and the more specific error if any.
func (e *OptionError) Unwrap() []error {
	if e.err != nil {
		return []error{ErrOption, e.err}
	}
	return []error{ErrOption}
}

// prepare applies opt and builds the variants to run and the plan they
// share, checking every variant with the load generator's bounds, so that
// a run never stops at its second variant for what could be known before
// its first.
func (s *Scenario) prepare(opt Options) (*Scenario, []NamedPolicy, behave.Plan, error) {
	eff, err := s.withOptions(opt)
	if err != nil {
		return nil, nil, behave.Plan{}, err
	}
	variants, err := eff.Policies()
	if err != nil {
		return nil, nil, behave.Plan{}, err
	}
	if opt.Policy != "" {
		var keep []NamedPolicy
		for _, v := range variants {
			if v.Name == opt.Policy {
				keep = append(keep, v)
			}
		}
		if len(keep) == 0 {
			return nil, nil, behave.Plan{}, noVariant(opt.Policy, variants)
		}
		variants = keep
	}
	if eff.Target != "" && len(variants) > 1 {
		return nil, nil, behave.Plan{}, &OptionError{Option: "policy", Msg: fmt.Sprintf("a run against the target %s drives a server whose policy sluice does not set: name the variant it runs (one of %s)", eff.Target, variantNames(variants))}
	}
	plan := eff.plan()
	plan.Segment = opt.Segment
	for _, v := range variants {
		if len(v.Policy.Channels) == 0 {
			// Every message a behaviour sends names a channel: under a
			// policy with none, all of them would be NotSent.
			return nil, nil, behave.Plan{}, fmt.Errorf("%s: variant %q: the policy has no channels, so every message the behaviours send would be refused (policy: {}?)", eff.File, v.Name)
		}
		if err := eff.checkRun(plan, v.Policy); err != nil {
			// Under a duration the caller gave, a bound the run breaks (a
			// ramp scaled with it past the longest run, say) is that
			// option's doing, not the file's: when the scenario at its
			// own duration keeps it.
			var pe *behave.ParamError
			if opt.Duration != 0 && errors.As(err, &pe) && s.keepsBoundsAtOwnDuration(opt, v.Policy) {
				return nil, nil, behave.Plan{}, &OptionError{Option: "duration", Msg: fmt.Sprintf("%v: %v", opt.Duration, err), err: err}
			}
			return nil, nil, behave.Plan{}, fmt.Errorf("%s: variant %q: %w", eff.File, v.Name, err)
		}
	}
	// What the behaviours send is checked once the harness has taken
	// every variant: a bound the run breaks is the run's, whichever the
	// variant, and a variant it refuses is named for that first.
	for _, v := range variants {
		if err := eff.checkChannels(v); err != nil {
			return nil, nil, behave.Plan{}, err
		}
	}
	return eff, variants, plan, nil
}

// checkRun checks a run of plan under p against the load generator's
// bounds, with the scenario's warm-up and interval.
func (s *Scenario) checkRun(plan behave.Plan, p core.Policy) error {
	// The transports and the network model too: which behaviour runs over
	// which transport is checked per population.
	err := loadgen.CheckRun(loadgen.RunSpec{Plan: plan, Warmup: s.Warmup, Interval: s.Interval, Transport: s.Transport, Network: s.Network}, p)
	var pe *behave.ParamError
	if errors.As(err, &pe) && pe.Owner == "run" {
		// The run's fields that the file sets, by the file's names.
		switch pe.Field {
		case "Interval":
			note := ""
			if s.intervalDefault {
				note = fmt.Sprintf(" (the file sets no interval: %v is the default)", s.Interval)
			}
			return &keyError{Key: "interval", Msg: fmt.Sprintf("%v %s%s", pe.Value, pe.Reason, note), err: pe}
		case "Warmup":
			return &keyError{Key: "warmup", Msg: fmt.Sprintf("%v must be at least 0 and shorter than duration", pe.Value), err: pe}
		}
	}
	return err
}

// keyError is a bound of the load generator's that a scenario key breaks,
// named by the key rather than the generator's field.
type keyError struct {
	Key, Msg string
	err      *behave.ParamError
}

func (e *keyError) Error() string { return e.Key + ": " + e.Msg }

// Unwrap returns the load generator's error.
func (e *keyError) Unwrap() error { return e.err }

// keepsBoundsAtOwnDuration reports whether the scenario, with opt but at its own
// duration, passes checkRun under p.
func (s *Scenario) keepsBoundsAtOwnDuration(opt Options, p core.Policy) bool {
	opt.Duration = 0
	own, err := s.withOptions(opt)
	return err == nil && own.checkRun(own.plan(), p) == nil
}

// recorderInvalid says why a run's recording cannot be trusted, if it
// cannot: an open-model run is only valid if the load generator kept its
// schedule (a late send hides the server's latency), and its percentiles
// only if no value was lost or clamped.
func recorderInvalid(rec *record.Recorder) []string {
	var out []string
	if err := rec.CheckSendLag(0.99, MaxSendLagP99); err != nil {
		out = append(out, err.Error())
	}
	if n := rec.Stats.Overdue; n > 0 {
		out = append(out, fmt.Sprintf("the load generator fell behind its schedule: %d actions due before the end were never carried out (their messages count as HeldAtEnd)", n))
	}
	if n := rec.TotalDropped(); n > 0 {
		out = append(out, fmt.Sprintf("%d latency values were lost from the histograms", n))
	}
	if n := rec.TotalClamped(); n > 0 {
		out = append(out, fmt.Sprintf("%d latency values fell outside the histograms' range and were clamped into it: the percentiles at its ends under-report", n))
	}
	return out
}

// recordFile creates the trace file of variant v in dir.
func recordFile(dir string, s *Scenario, v NamedPolicy) (*trace.Writer, *os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, &OptionError{Option: "record", Msg: err.Error()}
	}
	f, err := os.Create(filepath.Join(dir, v.Name+".trace"))
	if err != nil {
		return nil, nil, &OptionError{Option: "record", Msg: err.Error()}
	}
	w, err := trace.NewWriter(f, trace.Header{
		Recorder:     "sluice run " + s.Name + " (" + v.Name + ", sim, seed " + strconv.FormatUint(s.Seed, 10) + ")",
		Origin:       time.Unix(0, 0).UTC(),
		PolicyDigest: trace.PolicyDigest(v.Policy),
		Note:         "virtual time: origin is the run's start",
	})
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return w, f, nil
}

// transportName is the transport the results name: empty for TCP, the
// default, so that the results of a TCP run are what they were before
// there was a choice.
func transportName(t string) string {
	if t == drive.TransportTCP {
		return ""
	}
	return t
}
